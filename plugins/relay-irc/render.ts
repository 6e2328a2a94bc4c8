import { closeBidi, fileLines } from '../../src/index.js';
import type { OutgoingMessage } from '../../src/gateway/message.js';
import { textToIrcLines, type ToIrcFormat } from './format.js';
import { graphemesOf } from './graphemes.js';
import { antiPing, normalizeLineBreaks, safeLine, safeName } from './irc-text.js';
import { markupToText } from './markup.js';

/**
 * A gateway line as the PRIVMSG texts for one IRC channel. IRC has no threads, edits, deletions or
 * attachments, so each becomes plain attributed text (docs/plugins/relay-irc.md "What IRC shows"):
 *
 * - `message`: the to_irc format, `<name> text`; a reply puts a short quote first, `<name> (re bob: the
 *   start of…) text`;
 * - `action`: `* name text`;
 * - `edit`: one short line `<name> (edit) new text` (IRC cannot change what was said);
 * - `delete`: `* name deleted a message`;
 * - `join`, `leave`, `topic`: nothing (as on every side, docs/gateways.md: IRC shows its own joins, and
 *   the relay does not set the channel's topic).
 *
 * Files come as one line each with their link. Every piece goes through textToIrcLines, which makes
 * it safe for a command line.
 */

/** The most of a quoted message shown in front of a reply, in characters. */
const QUOTE_CHARS = 40;

export function renderForIrc(out: OutgoingMessage, prefix: string, format: ToIrcFormat): string[] {
  const who = { display_name: out.speaker.name, user_name: out.speaker.id };
  const text = markupToText(out.text);
  const asAction = { ...format, template: actionTemplate(format.template) };
  switch (out.kind) {
    case 'message':
      return textToIrcLines(withFiles(withQuote(text, out.quote, format.antiPing), out), who, prefix, format);
    case 'action':
      return textToIrcLines(withFiles(text, out), who, prefix, asAction);
    case 'edit':
      return textToIrcLines(`(edit) ${text}`, who, prefix, { ...format, oneLine: true });
    case 'delete':
      return textToIrcLines('deleted a message', who, prefix, asAction);
    case 'topic':
    case 'join':
    case 'leave':
      return [];
  }
}

/**
 * `* name text`, keeping whatever the to_irc format puts around the name (its prefix): "{prefix}<{name}>
 * {text}" becomes "{prefix}* {name} {text}". A format of another shape gets a plain `{prefix}* {name} {text}`.
 */
function actionTemplate(template: string): string {
  return template.includes('<{name}> ') ? template.replace('<{name}> ', '* {name} ') : '{prefix}* {name} {text}';
}

/** A reply without a thread to show it in: who and what it answers, cut short, before the text. */
function withQuote(text: string, quote: OutgoingMessage['quote'], ping: boolean): string {
  if (!quote) return text;
  const name = safeName(quote.name, 'someone');
  const snippet = cut(safeLine(normalizeLineBreaks(markupToText(quote.text)).replace(/\n+/g, ' ')).trim(), QUOTE_CHARS);
  return `(re ${closeBidi(ping ? antiPing(name) : name)}: ${closeBidi(snippet)}) ${text}`;
}

/** The files said with the line, one line each after the text (`[image: photo.jpg https://…]`, fileLines); a line of files alone shows only them. */
function withFiles(text: string, out: OutgoingMessage): string {
  const files = fileLines(out.files, out.refusedFiles);
  if (files.length === 0) return text;
  return (text.trim() === '' ? files : [text, ...files]).join('\n');
}

/** At most `chars` characters (whole graphemes), with "…" when something was left out. */
export function cut(text: string, chars: number): string {
  const parts = graphemesOf(text, chars + 1);
  return parts.length <= chars ? text : `${parts.slice(0, chars).join('').trimEnd()}…`;
}
