import { closeBidi } from '../../src/index.js';

/**
 * Text for Discord that stays text: markdown characters escaped, and every mention form defused
 * (`@everyone`, `@here`, `<@id>`, `<@&role>`, `<#channel>`) with a zero-width space, on top of the empty
 * `allowed_mentions` every post carries (so even a form Discord adds later pings nobody).
 */
const ZWSP = '\u200b';
const MARKDOWN = /[\\*_~`|>[\]()]/g;
/**
 * Headings (`#`), subtext (`-#`) and list items (`-`) are markdown only at the start of a line. The
 * white space before them stops at the line's end: `\s*` crossed line breaks, so from every line start
 * of a text of blank lines it ran to the end and back (quadratic, issue #31).
 */
const LINE_START_MARKDOWN = /^([^\S\n\r\u2028\u2029]*)([-#])/gm;

export function escapeForDiscord(text: string): string {
  return text
    // Control characters but newline and tab mean nothing on Discord and may confuse clients.
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
    .replace(MARKDOWN, (character) => `\\${character}`)
    .replace(LINE_START_MARKDOWN, '$1\\$2')
    .replace(/@(everyone|here)/gi, `@${ZWSP}$1`)
    .replace(/<([@#])/g, `<${ZWSP}$1`)
}

/** The line as posted: the template with the speaker's name and the text, both escaped; Discord's limit is 2,000 characters. */
export function renderLine(template: string, name: string, text: string): string {
  const line = template.replace('{name}', () => escapeForDiscord(closeBidi(name))).replace('{text}', () => escapeForDiscord(text));
  return line.length <= 2_000 ? line : `${line.slice(0, 1_999)}…`;
}

/** A Discord message's content as plain text for the chat: user, role and channel mentions by name where known. */
export function plainFromDiscord(content: string, names: ReadonlyMap<string, string>): string {
  return content
    .replace(/<@!?(\d+)>/g, (_, id: string) => `@${names.get(id) ?? id}`)
    .replace(/<a?:(\w+):\d+>/g, ':$1:');
}

/** A webhook post's text: the line alone (the speaker is the username), a reply's parent quoted above it. */
export function renderWebhookText(text: string, quote?: { name: string; text: string }): string {
  const snippet = quote ? quote.text.replace(/\s+/g, ' ').slice(0, 120) : '';
  const line = (quote ? `> **${escapeForDiscord(closeBidi(quote.name))}**: ${escapeForDiscord(closeBidi(snippet))}\n` : '') + escapeForDiscord(text);
  return line.length <= 2_000 ? line : `${line.slice(0, 1_999)}…`;
}
