import { createHash } from 'node:crypto';
import { attributedLines, closeBidi, oneLineName } from '../../src/index.js';

/**
 * Text for a MUC `<body>`: plain text, nothing in it is markup (no XHTML-IM is sent), so what must go is
 * what XML 1.0 cannot carry (most C0 controls, U+FFFE/U+FFFF, lone surrogates) and what would act as a
 * command: XEP-0245 makes a body that begins with `/me ` an action of the sender (the bot), so a line that
 * would begin with `/` gets a zero-width space in front. XMPP has no mass mentions to defuse.
 */
const ZWSP = '\u200b';
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** Prosody refuses stanzas past its size limit (256 KiB by default); a line is cut well before. */
const MAX_BODY = 10_000;

export function plainForXmpp(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(NOT_XML, '');
}

/** A line as it goes into the room: the template with the speaker's name and the text, both cleaned. */
export function renderLine(template: string, name: string, text: string): string {
  // The name is one line: a newline in it would make a second, unattributed line.
  const line = template.replace('{name}', () => closeBidi(plainForXmpp(name).replace(/\s+/g, ' '))).replace('{text}', () => plainForXmpp(text));
  const safe = line.startsWith('/') ? `${ZWSP}${line}` : line;
  return safe.length <= MAX_BODY ? safe : `${safe.slice(0, MAX_BODY - 1)}…`;
}

/** A room message as the chat shows it. */
export function chatLine(template: string, name: string, text: string): string {
  // Every line of the text carries the speaker (attributedLines); the name is one line, its bidi closed.
  const shown = oneLineName(name);
  return attributedLines(text, (line) => template.replace('{name}', () => shown).replace('{text}', () => line));
}

/**
 * The message id and XEP-0359 origin-id of a gateway line: made from its key, so a line sent again
 * (after a timeout, a reconnect, a crash) carries the same id and is recognised in the room's archive.
 */
export function originIdOf(key: string): string {
  return `gw-${createHash('sha256').update(key).digest('base64url')}`;
}

/** XEP-0245: a body beginning with `/me ` is an action of its sender. */
export function splitAction(body: string): { action: boolean; text: string } {
  return body.startsWith('/me ') ? { action: true, text: body.slice(4) } : { action: false, text: body };
}
