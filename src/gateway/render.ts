import { fileLines } from '../media/file-lines.js';
import { MAX_POST_LENGTH } from '../supervisor/chat-outbox.js';
import type { MapRecord } from '../store/message-map.js';
import { attributedLines, oneLineName } from '../text/attributed-lines.js';
import { closeBidi } from '../text/bidi.js';
import { chatSafeText } from '../text/chat-safe-text.js';

/** How much of a message a quote or a deletion notice shows. */
const SNIPPET_CHARS = 60;

/** The start of a text on one line, cut at a word where it can be, with … when cut. */
export function snippet(text: string, chars = SNIPPET_CHARS): string {
  // chatSafeText first: NEL and the Unicode separators are line breaks too, and must not start a line of their own.
  const line = chatSafeText(text).replace(/\s+/g, ' ').trim();
  if (line.length <= chars) return line;
  const cut = line.slice(0, chars);
  const space = cut.lastIndexOf(' ');
  return `${(space > chars / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/**
 * How a relayed line shows in a chat. Chat messages carry no reply, edit or deletion in the spec, so:
 * a reply gets a quote line first (`> alice: start of what it answers…`), an edit is a new line
 * marked `(edit)`, a deletion a short notice quoting what was deleted. The relay's own template
 * (`chatText`) renders the speaker and text; the default is `<name> text` (`* name text` for an action).
 * Every line of the text carries the speaker (`<name> first` / `<name> second`, attributedLines), so no
 * line of it reads as someone else's; names and quotes are one line with their bidi controls closed.
 * Files said with the line follow it, one line each with the speaker (`<name> [image: photo.jpg https://…]`,
 * fileLines); chat messages themselves carry no files in the spec, so only relayed lines have any.
 */
export function chatLineOf(record: MapRecord, chatText: string | undefined, quoted?: MapRecord, changed?: MapRecord): string {
  const name = oneLineName(record.speaker.name);
  if (record.kind === 'delete') {
    return changed ? `* ${name} deleted a message: "${closeBidi(snippet(changed.text))}"` : `* ${name} deleted a message`;
  }
  const render = record.kind === 'action' ? (line: string) => `* ${name} ${line}` : (line: string) => `<${name}> ${line}`;
  // Files show as one line each after the text, with the speaker (docs/gateways.md "Files"); a line of files alone shows only them.
  const files = fileLines(record.files, record.refusedFiles);
  const texts = files.length > 0 && record.text.trim() === '' ? [] : [chatText ?? attributedLines(record.text, render)];
  if (files.length > 0) texts.push(attributedLines(files.join('\n'), render));
  const said = texts.join('\n');
  const line = record.kind === 'edit' ? `(edit) ${said}` : said;
  return quoted ? `> ${oneLineName(quoted.speaker.name)}: ${closeBidi(snippet(quoted.text))}\n${line}` : line;
}

/** What starts a post that goes on with a line too long for the one before it: the speaker again. */
export function continuationOf(record: MapRecord): string {
  const name = oneLineName(record.speaker.name);
  return record.kind === 'action' ? `* ${name} ` : `<${name}> `;
}

/**
 * A line in posts the chat takes (MAX_POST_LENGTH characters each), cut at line ends or spaces where it
 * can be, never inside a surrogate pair. A post that goes on with a line cut inside starts with
 * `carry` (continuationOf: the speaker), so no part of a relayed line is posted without its speaker.
 */
export function splitForChat(line: string, carry = ''): string[] {
  const parts: string[] = [];
  // A carry is a short name; one too long to leave room would never let the rest shrink.
  const again = carry.length <= MAX_POST_LENGTH / 4 ? carry : '';
  // By index, not by slicing the rest again for each part: linear in the line's length.
  let at = 0;
  let lead = '';
  while (lead.length + line.length - at > MAX_POST_LENGTH) {
    const room = MAX_POST_LENGTH - lead.length;
    const window = line.slice(at, at + room);
    const newline = window.lastIndexOf('\n');
    if (newline > room / 2) {
      parts.push(lead + window.slice(0, newline));
      at += newline + 1;
      lead = '';
      continue;
    }
    const space = window.lastIndexOf(' ');
    let cut = space > room / 2 ? space : room;
    const before = window.charCodeAt(cut - 1);
    if (before >= 0xd800 && before <= 0xdbff) cut -= 1;
    parts.push(lead + window.slice(0, cut));
    at += cut;
    if (line.charCodeAt(at) === 0x20 || line.charCodeAt(at) === 0x0a) at += 1;
    lead = again;
  }
  parts.push(lead + line.slice(at));
  return parts;
}
