import { closeBidi, fileLines, type Attachment } from '../../src/index.js';

/**
 * Lines for Matrix that stay text: every post has a plain `body` and an HTML `formatted_body`, and
 * clients show the HTML, so the speaker's words are HTML-escaped there (a `<script>` or an `<a>` is
 * shown, never made). `@room` is defused with a zero-width space in both, on top of the empty
 * `m.mentions` every post carries (intentional mentions: nobody is pinged, whatever the text says).
 */
const ZWSP = '\u200b';
/** Matrix events are at most 64 KiB; a line is cut well below that (the HTML body may be larger than the text). */
const MAX_TEXT = 16_000;

/** Content of an m.room.message as the relay sends it. */
export interface MatrixContent {
  msgtype: string;
  body: string;
  format?: 'org.matrix.custom.html';
  formatted_body?: string;
  'm.mentions'?: Record<string, never>;
  'm.relates_to'?: Record<string, unknown>;
  'm.new_content'?: MatrixContent;
  /** A file event's (m.image, m.file, ...): its mxc:// URI, its name, and what the relay knows of it. */
  url?: string;
  filename?: string;
  info?: { mimetype: string; size: number };
}

/** Control characters but newline and tab mean nothing in a chat line and may confuse clients. */
export function stripControls(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '');
}

function defuse(text: string): string {
  return text.replace(/@room\b/gi, (found) => `@${ZWSP}${found.slice(1)}`);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": '#39' }[c]!};`);
}

function cut(text: string): string {
  return text.length <= MAX_TEXT ? text : `${text.slice(0, MAX_TEXT - 1)}…`;
}

/** A line said somewhere else, as Matrix content: the template with the name (bold in HTML) and the text. */
export function renderLine(
  line: { template: string; msgtype: string; name: string; text: string; action?: boolean; quote?: { name: string; text: string } },
): MatrixContent {
  const name = closeBidi(defuse(stripControls(line.name)));
  const text = defuse(cut(stripControls(line.text)));
  const html = (value: string) => escapeHtml(value).replace(/\n/g, '<br>');
  // An action (/me) shows as `* name text`, as IRC clients show it; a message follows the template.
  let body = line.action ? `* ${name} ${text}` : line.template.split('{text}').map((part) => part.split('{name}').join(name)).join(text);
  let formatted = line.action ? `* <b>${html(name)}</b> <em>${html(text)}</em>`
    : line.template.split('{text}').map((part) => part.split('{name}').map(html).join(`<b>${html(name)}</b>`)).join(html(text));
  if (line.quote) {
    // The gateway could not map what this answers to a Matrix event: a quote line stands in for the reply.
    const quoteName = closeBidi(defuse(stripControls(line.quote.name)));
    const quoteText = closeBidi(defuse(stripControls(line.quote.text)));
    body = `> ${quoteName}: ${quoteText}\n${body}`;
    formatted = `<blockquote><b>${html(quoteName)}</b>: ${html(quoteText)}</blockquote>${formatted}`;
  }
  return { msgtype: line.msgtype, body, format: 'org.matrix.custom.html', formatted_body: formatted, 'm.mentions': {} };
}

/** The msgtype of a file: an image (its bytes checked to be one), a video, a sound, else a file. */
function fileMsgtype(file: Attachment): string {
  if (file.image) return 'm.image';
  if (file.contentType.startsWith('video/')) return 'm.video';
  if (file.contentType.startsWith('audio/')) return 'm.audio';
  return 'm.file';
}

/**
 * A file said elsewhere, as the event that carries it once uploaded (the caller adds `url`): the body is
 * the speaker's line with the file's name (`Bob: photo.jpg`, a caption for clients of spec v1.10, the
 * text others show), `filename` the name, `info` its type and size.
 */
export function fileContent(line: { template: string; name: string; file: Attachment }): MatrixContent {
  const spoken = renderLine({ template: line.template, msgtype: 'm.file', name: line.name, text: line.file.name });
  return { ...spoken, msgtype: fileMsgtype(line.file), filename: line.file.name, info: { mimetype: line.file.contentType, size: line.file.size } };
}

/** A file that does not go natively (over the homeserver's limit, gone from the store): its link line, said by the speaker. */
export function fileLinkContent(line: { template: string; msgtype: string; name: string; file: Attachment }): MatrixContent {
  return renderLine({ template: line.template, msgtype: line.msgtype, name: line.name, text: fileLines([line.file]).join('\n') });
}

/** An edit of an earlier post (`m.replace`): `* ` + the new text for clients without edits, the new content for those with. */
export function editContent(content: MatrixContent, target: string): MatrixContent {
  return {
    msgtype: content.msgtype, body: `* ${content.body}`, format: content.format!, formatted_body: `* ${content.formatted_body!}`,
    'm.mentions': {}, 'm.new_content': content, 'm.relates_to': { rel_type: 'm.replace', event_id: target },
  };
}

/**
 * The body of a Matrix message as plain text for the chat. A reply's body may start with the fallback
 * quote clients used to add (`> <@alice:example.org> what it answers`, then an empty line): the gateway
 * quotes the answered line itself, so the fallback goes.
 */
export function plainFromMatrix(body: string, isReply: boolean): string {
  let text = body;
  if (isReply && text.startsWith('> <')) {
    const lines = text.split('\n');
    let index = 0;
    while (index < lines.length && lines[index]!.startsWith('>')) index += 1;
    if (lines[index] === '') index += 1;
    text = lines.slice(index).join('\n');
  }
  return stripControls(text).trim();
}
