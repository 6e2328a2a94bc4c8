import type { ChatMessage } from '../../src/index.js';
import { visibleControls, visibleLines, wireLine } from '../../src/index.js';
import { fileDetails, filesOf, refusalsOf, safeLink, textFileLines } from './file-entries.js';
import { formatZoned, messageDate } from './time.js';

/**
 * The transcript formats: how one chat message becomes an entry of a file, the header a new file
 * starts with, and how the last msg_num of a file is read back from its last line.
 */

export const FORMAT_NAMES = ['jsonl', 'text', 'html', 'markdown'] as const;
export type FormatName = (typeof FORMAT_NAMES)[number];

export interface RenderOptions {
  timeZone: string;
  /** Tokens `YYYY MM DD HH mm ss SSS Z` (see time.ts). */
  timeFormat: string;
}

/** What a file is of, for its title. */
export interface FileMeta {
  group: string;
  chat: string;
  /** The day (`YYYY-MM-DD`) of a daily file, or a period (`2024-05-01 to 2024-05-07`). */
  period?: string;
  timeZone: string;
}

/** A chat's history was reset (docs/protocol.md "History that goes backwards"): the marker line says so. */
export interface ResetNote {
  /** When the supervisor noticed it (ISO 8601). */
  at: string;
  reason: 'behind' | 'recreated' | 'replaced';
  previousCursor: number | undefined;
  newest: number | undefined;
  chatId: string;
}

/** The marker's words, the same in every format but jsonl. */
function resetWords(note: ResetNote, options: RenderOptions): string {
  const why = note.reason !== 'behind'
    ? 'the chat was made again'
    : `the service's newest message is ${note.newest ?? 0}, the transcript had up to ${note.previousCursor ?? 0}`;
  return `history was reset at ${formatZoned(messageDate(note.at), options.timeZone, options.timeFormat)} (${why}); the messages below start again at 1`;
}

export interface Format {
  name: FormatName;
  ext: string;
  /** What a new file starts with. */
  header(meta: FileMeta): string;
  /** What closes a whole document (exports only: the logger appends, so its files stay open). */
  footer(): string;
  /**
   * One message as an entry; always ends with a newline. `wire` is the message's JSON text as the
   * socket brought it, when it did (jsonl makes its entry from it rather than serialise the message).
   */
  entry(message: ChatMessage, options: RenderOptions, wire?: string): string;
  /**
   * The line that marks a reset of the chat's history: what follows starts again at msg_num 1. Its
   * msgNumOf (or its index line) is 0, so a file that ends in it is read back as "after 0".
   */
  reset(note: ResetNote, options: RenderOptions): string;
  /**
   * The msg_num an entry line carries, or undefined when the line is not an entry. Formats whose
   * lines carry none (text) keep an index file beside them instead.
   */
  msgNumOf?(line: string): number | undefined;
}

/** The name a line shows: the display name, else the user name, else the id (control characters shown as `\u{XX}`). */
export function senderName(message: ChatMessage): string {
  return visibleControls(message.display_name || message.user_name || `user ${message.user_id}`);
}

const isEvent = (message: ChatMessage) => message.type !== undefined && message.type !== 'chat_msg_type_normal';

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Escaped HTML of a message's text: line breaks kept, http(s) addresses linked, other controls shown as `\u{XX}`. */
function htmlText(text: string): string {
  return visibleLines(text).map((line) => escapeHtml(line)
    .replace(/\bhttps?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g, (url) => `<a href="${url}" rel="nofollow noopener noreferrer">${url}</a>`))
    .join('<br>');
}

/**
 * Markdown that shows the text as typed: markup characters escaped, HTML neutralised, one line (line
 * breaks as `<br>`), other control characters shown as `\u{XX}`.
 */
export function escapeMarkdown(text: string): string {
  return visibleLines(text).map((line) => line
    // Inside a list item only inline markup matters: emphasis, code, links, tables, strikethrough.
    .replace(/[\\`*_[\]|~]/g, '\\$&')
    .replace(/&/g, '&amp;').replace(/</g, '&lt;'))
    .join('<br>');
}

const LINK_REL = 'rel="nofollow noopener noreferrer"';

/**
 * A relayed line's files in html, on the entry's one line: an image with a link as a lazy thumbnail
 * linking to the stored file (its size capped by the page's style), another file with a link as a link,
 * a file without one as its name; each with its type and size. Refused files say why.
 */
function htmlFiles(message: ChatMessage): string {
  const parts = filesOf(message).map((file) => {
    const url = safeLink(file.url);
    const name = escapeHtml(visibleControls(file.name));
    const details = escapeHtml(fileDetails(file));
    if (url === undefined) return `<span class="file">${name} ${details}</span>`;
    const href = escapeHtml(url);
    if (file.image) return `<span class="file"><a class="thumb" href="${href}" ${LINK_REL}><img src="${href}" alt="${name}" loading="lazy"></a> ${details}</span>`;
    return `<span class="file"><a href="${href}" ${LINK_REL}>${name}</a> ${details}</span>`;
  });
  for (const refusal of refusalsOf(message)) {
    parts.push(`<span class="file refused">a file was not relayed: ${escapeHtml(visibleControls(refusal.name))}: ${escapeHtml(visibleControls(refusal.reason))}</span>`);
  }
  return parts.length === 0 ? '' : `<span class="files">${parts.join('')}</span>`;
}

/** A URL as a markdown link target: the characters that would end or break it percent-encoded. */
function markdownTarget(url: string): string {
  return url.replace(/[\s()<>\\]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** A relayed line's files in markdown, each after a `<br>` on the entry's one line (a link where there is one). */
function markdownFiles(message: ChatMessage): string {
  let out = '';
  for (const file of filesOf(message)) {
    const url = safeLink(file.url);
    const name = escapeMarkdown(visibleControls(file.name));
    out += `<br>[${file.image ? 'image' : 'file'}: ${url ? `[${name}](${markdownTarget(url)})` : name} ${escapeMarkdown(fileDetails(file))}]`;
  }
  for (const refusal of refusalsOf(message)) out += `<br>[a file was not relayed: ${escapeMarkdown(visibleControls(refusal.name))}: ${escapeMarkdown(visibleControls(refusal.reason))}]`;
  return out;
}

const time = (message: ChatMessage, options: RenderOptions) => formatZoned(messageDate(message.created), options.timeZone, options.timeFormat);

function title(meta: FileMeta): string {
  return `${meta.group} / ${meta.chat}${meta.period ? ` — ${meta.period}` : ''} (${meta.timeZone})`;
}

const jsonl: Format = {
  name: 'jsonl',
  ext: 'jsonl',
  header: () => '',
  footer: () => '',
  // Every field as received (the client hands ids on as strings of their exact digits), and who said a
  // relayed line (`relayed_from`, see logged-message.ts). From the frame's own text where it can vouch
  // for it (src/api/wire-line.ts): the same line, without serialising the message again.
  entry: (message, _options, wire) => (wire === undefined ? undefined : wireLine(wire)) ?? `${JSON.stringify(message)}\n`,
  reset: (note) => `${JSON.stringify({
    object: 'history_reset', msg_num: 0, at: note.at, reason: note.reason, chat_id: note.chatId,
    previous_msg_num: note.previousCursor ?? null, newest_msg_num: note.newest ?? null,
  })}\n`,
  msgNumOf(line) {
    try {
      const value = (JSON.parse(line) as { msg_num?: unknown }).msg_num;
      return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
    } catch {
      return undefined;
    }
  },
};

const text: Format = {
  name: 'text',
  ext: 'txt',
  header: () => '',
  footer: () => '',
  entry(message, options) {
    const head = isEvent(message) ? `[${time(message, options)}] -- ` : `[${time(message, options)}] <${senderName(message)}> `;
    // Later lines of a multi-line message are indented under the first, so every entry starts with `[`;
    // control characters other than line breaks and tabs are shown as `\u{XX}` (controls.ts).
    // A relayed line's files: a line each, indented like the message's later lines.
    return `${head}${[...visibleLines(message.message), ...textFileLines(message)].join(`\n${' '.repeat(4)}`)}\n`;
  },
  reset: (note, options) => `[${formatZoned(messageDate(note.at), options.timeZone, options.timeFormat)}] -- ${resetWords(note, options)}\n`,
};

const HTML_STYLE = 'body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}'
  + '.m{margin:.15rem 0}.m time{color:#777;font-variant-numeric:tabular-nums;margin-right:.5rem}'
  + '.m .n{font-weight:600;margin-right:.4rem}.m.e{color:#777;font-style:italic}'
  + '.files{display:block;margin-left:1rem}.file{display:block;color:#555}.file.refused{font-style:italic}'
  + '.thumb img{max-width:320px;max-height:240px;box-sizing:border-box;vertical-align:middle;border:1px solid #ddd}';

const html: Format = {
  name: 'html',
  ext: 'html',
  header: (meta) => `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title(meta))}</title>`
    + `<style>${HTML_STYLE}</style></head><body><h1>${escapeHtml(title(meta))}</h1>\n`,
  footer: () => '</body></html>\n',
  entry(message, options) {
    const when = `<time datetime="${escapeHtml(message.created ?? '')}">${escapeHtml(time(message, options))}</time>`;
    const attrs = `class="m${isEvent(message) ? ' e' : ''}" id="m${message.msg_num}" data-msg-num="${message.msg_num}"`;
    const who = isEvent(message) ? '' : `<span class="n">${escapeHtml(senderName(message))}</span>`;
    return `<div ${attrs}>${when}${who}<span class="t">${htmlText(message.message)}</span>${htmlFiles(message)}</div>\n`;
  },
  reset: (note, options) => `<div class="m e r" id="reset-${Date.parse(note.at) || 0}" data-msg-num="0"><span class="t">${escapeHtml(resetWords(note, options))}</span></div>\n`,
  msgNumOf(line) {
    const match = /^<div class="m[^"]*" id="(?:m\d+|reset-\d+)" data-msg-num="(\d+)">.*<\/div>$/.exec(line);
    return match ? Number(match[1]) : undefined;
  },
};

const markdown: Format = {
  name: 'markdown',
  ext: 'md',
  header: (meta) => `# ${escapeMarkdown(title(meta))}\n\n`,
  footer: () => '',
  entry(message, options) {
    const anchor = `<a id="m${message.msg_num}"></a>`;
    const when = `\`${time(message, options)}\``;
    const body = escapeMarkdown(message.message) + markdownFiles(message);
    return isEvent(message) ? `- ${anchor}${when} *${body}*\n` : `- ${anchor}${when} **${escapeMarkdown(senderName(message))}**: ${body}\n`;
  },
  reset: (note, options) => `- <a id="reset-${Date.parse(note.at) || 0}"></a>*${escapeMarkdown(resetWords(note, options))}*\n`,
  msgNumOf(line) {
    if (line.startsWith('- <a id="reset-')) return 0;
    const match = /^- <a id="m(\d+)"><\/a>/.exec(line);
    return match ? Number(match[1]) : undefined;
  },
};

export const FORMATS: Record<FormatName, Format> = { jsonl, text, html, markdown };
