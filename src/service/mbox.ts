import { Readable } from 'node:stream';
import { ZipFile } from 'yazl';
import type { Group, Message } from './model.js';
import type { Store } from './store.js';

/**
 * The archive download's content: one `messages.mbox` (mboxrd flavour) inside a zip, as the field notes
 * describe the real service's download. The helpers that format text are pure so they can be tested
 * without a store.
 */

/** What one message contributes to the mbox, already resolved from the store. */
export interface MboxEntry {
  senderEmail: string;
  senderName: string;
  groupAddress: string;
  subject: string;
  messageId: string;
  msgNum: number;
  created: number;
  body: string;
  isPlainText: boolean;
}

export const MBOX_FILENAME = 'messages.mbox';
/** Our decision: the domain of Message-Ids and group addresses, the one present.ts uses for email_address. */
export const MAIL_DOMAIN = 'groups.local';

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

const pad2 = (n: number): string => String(n).padStart(2, '0');

function clockTime(date: Date): string {
  return `${pad2(date.getUTCHours())}:${pad2(date.getUTCMinutes())}:${pad2(date.getUTCSeconds())}`;
}

/** C asctime() in UTC, as mbox "From " lines carry it: the day of the month is space-padded to two. */
export function asctime(ms: number): string {
  const d = new Date(ms);
  const day = String(d.getUTCDate()).padStart(2, ' ');
  return `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${day} ${clockTime(d)} ${d.getUTCFullYear()}`;
}

/** RFC 2822 date-time in UTC, e.g. `Sat, 21 Nov 2026 19:18:29 +0000`. */
export function rfc2822Date(ms: number): string {
  const d = new Date(ms);
  return `${DAYS[d.getUTCDay()]}, ${pad2(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ` +
    `${clockTime(d)} +0000`;
}

/**
 * mboxrd quoting: every line that already looks like a (quoted) "From " separator gets one more `>`,
 * so a reader can split messages unambiguously and undo the quoting exactly. In an mbox a line ends
 * with `\n` alone; a multiline `^` would also match after `\r`, U+2028 and U+2029, which readers do
 * not take as line ends, and the quote added there would never be taken off.
 */
export function quoteFromLines(body: string): string {
  return body.replace(/(^|\n)(>*From )/g, '$1>$2');
}

/** Header values are one line: a stored subject or name with a line break must not inject headers. */
function oneLine(value: string): string {
  return value.replace(/[\r\n]+[ \t]*/g, ' ');
}

/**
 * RFC 2047 encoded-words for header text that is not plain ASCII. Each word holds at most 45 UTF-8 bytes
 * of whole characters, so no encoded-word exceeds the 75-character limit.
 */
export function encodeHeaderText(value: string): string {
  const text = oneLine(value);
  if (/^[\x20-\x7e]*$/.test(text)) return text;
  const words: string[] = [];
  let chunk = '';
  for (const char of text) {
    if (Buffer.byteLength(chunk + char) > 45) {
      words.push(chunk);
      chunk = '';
    }
    chunk += char;
  }
  if (chunk) words.push(chunk);
  return words.map((w) => `=?UTF-8?B?${Buffer.from(w, 'utf8').toString('base64')}?=`).join(' ');
}

/** `"Full Name" <email>`; a non-ASCII name becomes encoded-words, which must not be inside quotes. */
function fromHeader(name: string, email: string): string {
  const display = oneLine(name);
  if (!display) return `<${email}>`;
  if (!/^[\x20-\x7e]*$/.test(display)) return `${encodeHeaderText(display)} <${email}>`;
  return `"${display.replace(/(["\\])/g, '\\$1')}" <${email}>`;
}

/**
 * The left part of a Message-Id must be dot-atom text; ids are opaque and may hold `:`, `.` runs and
 * the like, so anything outside atext (and `%` itself, to stay reversible) is percent-encoded.
 */
export function messageIdLocalPart(id: string): string {
  return id.replace(/[^A-Za-z0-9!#$&'*+/=?^_`{|}~-]/gu, (char) =>
    [...Buffer.from(char, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/** An address usable on the "From " separator line, which is split on spaces by mbox readers. */
function envelopeAddress(email: string): string {
  const address = email.replace(/\s+/g, '');
  return address || `MAILER-DAEMON@${MAIL_DOMAIN}`;
}

/** One message in mboxrd form: separator line, headers, blank line, quoted body, blank line. */
export function mboxMessage(entry: MboxEntry): string {
  const sender = envelopeAddress(entry.senderEmail);
  const kind = entry.isPlainText ? 'text/plain' : 'text/html';
  // The body as stored, `\r` and a final line feed included: the reader gives back exactly this.
  const body = quoteFromLines(entry.body);
  const lines = [
    `From ${sender} ${asctime(entry.created)}`,
    `Date: ${rfc2822Date(entry.created)}`,
    `From: ${fromHeader(entry.senderName, sender)}`,
    `To: ${entry.groupAddress}`,
    `Subject: ${encodeHeaderText(entry.subject)}`,
    `Message-Id: <${messageIdLocalPart(entry.messageId)}@${MAIL_DOMAIN}>`,
    `X-Msg-Num: ${entry.msgNum}`,
    'MIME-Version: 1.0',
    `Content-Type: ${kind}; charset=utf-8`,
    // The body is written as stored (UTF-8, long lines allowed); 8bit says so to MIME readers.
    'Content-Transfer-Encoding: 8bit',
    '',
  ];
  if (body !== '') lines.push(body);
  return `${lines.join('\n')}\n\n`;
}

export function mboxEntryOf(store: Store, group: Group, message: Message): MboxEntry {
  const user = store.users.get(message.userId);
  return {
    senderEmail: user?.email ?? '',
    senderName: user?.fullName ?? '',
    groupAddress: `${group.name}@${MAIL_DOMAIN}`,
    subject: message.subject,
    messageId: message.id,
    msgNum: message.msgNum,
    created: message.created,
    body: message.body,
    isPlainText: message.isPlainText,
  };
}

/**
 * The mbox as a byte stream, formatted one message at a time as the zip pulls it, so a large archive is
 * never held in memory whole. Chunks are Buffers: yazl counts the entry size in bytes.
 */
export function mboxStream(store: Store, group: Group, messages: readonly Message[]): Readable {
  function* chunks(): Generator<Buffer> {
    for (const message of messages) yield Buffer.from(mboxMessage(mboxEntryOf(store, group, message)), 'utf8');
  }
  return Readable.from(chunks(), { objectMode: false });
}

/** A zip holding exactly `messages.mbox`, streamed; an empty `messages` gives a 0-byte mbox. */
export function archiveZip(store: Store, group: Group, messages: readonly Message[], mtime: number): Readable {
  const zip = new ZipFile();
  // yazl's outputStream is a PassThrough; its typings only promise the older NodeJS.ReadableStream.
  const output = zip.outputStream as Readable;
  const mbox = mboxStream(store, group, messages);
  // yazl does not forward errors of a stream given to addReadStream; without this the response would
  // hang half-sent instead of being cut off.
  mbox.on('error', (error) => output.destroy(error));
  zip.on('error', (error: Error) => output.destroy(error));
  zip.addReadStream(mbox, MBOX_FILENAME, { mtime: new Date(mtime) });
  zip.end();
  return output;
}
