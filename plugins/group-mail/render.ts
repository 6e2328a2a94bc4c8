import { chatSafeText, closeBidi, htmlToText, type ActivityLogEntry, type Message } from '../../src/index.js';

/** What a template may name about an archive message. */
export interface MessageFields {
  subject: string;
  author: string;
  snippet: string;
  link: string;
  hashtags: string;
  group: string;
  msg_num: string;
}

/** `{name}` → value; unknown names stay as written (a typo shows, rather than vanishing). */
export function fill(template: string, fields: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => fields[name] ?? whole);
}

/**
 * Other people's text as one field of a line: what the chat refuses cleaned (chatSafeText: controls
 * gone, NEL and the Unicode separators line breaks), made one line, its bidi controls closed at its end
 * (closeBidi), so a BEL cannot cost the announcement and an override cannot reverse the fields after it.
 */
export function field(text: string): string {
  return closeBidi(oneLine(chatSafeText(text)));
}

/** One line: runs of white space (line breaks included) become one space, and empty `()`/`—` left by empty fields go. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/\s+—\s*$/, '').trim();
}

/** The topic's subject, without the `Re:` a reply's subject starts with. */
export function topicSubject(message: Message): string {
  return message.subject.replace(/^(\s*re:\s*)+/i, '').trim();
}

/**
 * The body as a reader sees it first: plain text from the HTML, without what it quotes (`>` lines and the
 * "On … wrote:" line that introduces them) and without the signature (after a `-- ` line), shortened.
 */
export function snippetOf(message: Message, length: number): string {
  if (length === 0) return '';
  // In HTML mail the quoted part is a blockquote (quotes within quotes go with it).
  const html = message.is_plain_text ? message.body : withoutBlockquotes(message.body);
  // Cleaned first: NUL and ESC go, NEL and U+2028 are line breaks like the others.
  const text = chatSafeText(message.is_plain_text ? message.body : htmlToText(html));
  const kept: string[] = [];
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i]!;
    if (/^--\s?$/.test(line)) break;
    if (/^\s*>/.test(line)) continue;
    // "On Mon, 1 Jan 2026, Alice wrote:" introduces a quote: dropped with it.
    if (/\bwrote:\s*$/.test(line) && nextWithText(lines, i + 1)?.trimStart().startsWith('>')) continue;
    kept.push(line);
  }
  const plain = kept.join(' ').replace(/\s+/g, ' ').trim();
  // Bidi closed after the cut: the cut may take the closer away.
  return closeBidi(plain.length <= length ? plain : `${plain.slice(0, Math.max(0, length - 1)).trimEnd()}…`);
}

/** The first line from `from` on that is not blank (found without copying the rest: a body may have 100,000 lines). */
function nextWithText(lines: readonly string[], from: number): string | undefined {
  for (let i = from; i < lines.length; i += 1) if (lines[i]!.trim() !== '') return lines[i];
  return undefined;
}

const BLOCKQUOTE_OPEN = /<blockquote[\s>]/gi;
const BLOCKQUOTE_CLOSE = /<\/blockquote\s*>/gi;

/**
 * HTML without its quoted parts: every `<blockquote>` with its closing tag and all between (quotes within
 * quotes included; a tag never closed stays). In one pass, each closing tag paired with the nearest open
 * one before it (issue #31: removing the innermost quotes again and again was quadratic in the depth).
 */
export function withoutBlockquotes(html: string): string {
  const marks: Array<{ at: number; end: number; open: boolean }> = [];
  for (const match of html.matchAll(BLOCKQUOTE_OPEN)) marks.push({ at: match.index, end: match.index + match[0].length, open: true });
  if (marks.length === 0) return html;
  for (const match of html.matchAll(BLOCKQUOTE_CLOSE)) marks.push({ at: match.index, end: match.index + match[0].length, open: false });
  marks.sort((a, b) => a.at - b.at);
  const opens: number[] = [];
  const quotes: Array<{ start: number; end: number }> = [];
  for (const mark of marks) {
    if (mark.open) opens.push(mark.at);
    else if (opens.length > 0) quotes.push({ start: opens.pop()!, end: mark.end });
  }
  // Pairs are nested or apart: the outermost ones (by start) cover the rest.
  quotes.sort((a, b) => a.start - b.start);
  let out = '';
  let kept = 0;
  for (const quote of quotes) {
    if (quote.start < kept) continue;
    out += html.slice(kept, quote.start);
    kept = quote.end;
  }
  return out + html.slice(kept);
}

/** The fields of a message for the templates. */
export function messageFields(message: Message, options: { group: string; groupUrl: string; snippetLength: number; link: string }): MessageFields {
  const link = fill(options.link, {
    group_url: options.groupUrl, msg_num: String(message.msg_num), message_id: message.id, topic_id: message.topic_id,
  });
  return {
    subject: field(topicSubject(message)),
    author: field(message.name) || 'someone',
    snippet: snippetOf(message, options.snippetLength),
    link,
    hashtags: (message.hashtags ?? []).map((tag) => `#${field(tag.name)}`).join(' '),
    group: options.group,
    msg_num: String(message.msg_num),
  };
}

/** Whether the message is a reply in its topic (the older form has no is_reply: its subject says). */
export function isReply(message: Message): boolean {
  return message.is_reply ?? /^\s*re:/i.test(message.subject);
}

/** Plain text of an activity entry (its HTML: a link to the member, then what happened). */
export function activityText(entry: ActivityLogEntry, template: string, group: string): string {
  return oneLine(fill(template, { entry: field(htmlToText(entry.entry)), action: field(entry.action ?? ''), group }));
}

/** The start of a line, for a subject: its first words, at most `max` characters. */
export function startOf(text: string, max = 60): string {
  const line = text.replace(/\s+/g, ' ').trim();
  if (line.length <= max) return line;
  const cut = line.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
