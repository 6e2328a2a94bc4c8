import { MAX_POST_LENGTH } from '../supervisor/chat-outbox.js';
import type { MapRecord } from '../store/message-map.js';

/** How much of a message a quote or a deletion notice shows. */
const SNIPPET_CHARS = 60;

/** The start of a text on one line, cut at a word where it can be, with … when cut. */
export function snippet(text: string, chars = SNIPPET_CHARS): string {
  const line = text.replace(/\s+/g, ' ').trim();
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
 */
export function chatLineOf(record: MapRecord, chatText: string | undefined, quoted?: MapRecord, changed?: MapRecord): string {
  const name = record.speaker.name;
  if (record.kind === 'delete') {
    return changed ? `* ${name} deleted a message: "${snippet(changed.text)}"` : `* ${name} deleted a message`;
  }
  const said = chatText ?? (record.kind === 'action' ? `* ${name} ${record.text}` : `<${name}> ${record.text}`);
  const line = record.kind === 'edit' ? `(edit) ${said}` : said;
  return quoted ? `> ${quoted.speaker.name}: ${snippet(quoted.text)}\n${line}` : line;
}

/** A line in posts the chat takes (MAX_POST_LENGTH characters each), cut at line ends or spaces where it can be. */
export function splitForChat(line: string): string[] {
  const parts: string[] = [];
  let rest = line;
  while (rest.length > MAX_POST_LENGTH) {
    const window = rest.slice(0, MAX_POST_LENGTH);
    const at = Math.max(window.lastIndexOf('\n'), window.lastIndexOf(' '));
    const cut = at > MAX_POST_LENGTH / 2 ? at : MAX_POST_LENGTH;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^[\n ]/, '');
  }
  parts.push(rest);
  return parts;
}
