/**
 * Chat text made safe for Slack's `text` field: it shows as written and can never mention anyone.
 *
 * Slack's control sequences all start with `<` (`<!channel>`, `<!here>`, `<!everyone>`, `<@U…>`,
 * `<#C…>`, `<!subteam^…>`, `<url|label>`), so escaping `&`, `<` and `>` as Slack documents
 * (`&amp;`, `&lt;`, `&gt;`) turns them into plain text, `&lt;`-style text included (it becomes
 * `&amp;lt;`, shown as `&lt;`). Bare `@channel`, `@here`, `@everyone` (and the legacy `@group`), which
 * Slack links only with `link_names`/`parse: full`, also get a zero-width joiner after the `@` as a
 * second line of defence; the relay posts with `parse: 'none'` and `link_names: false` as well.
 */

/** U+200D, invisible: `@\u200Dchannel` reads as @channel but is no keyword. */
export const ZERO_WIDTH_JOINER = '\u200D';

const BROADCAST = /(?<![\p{L}\p{N}_])([@\uFF20\uFE6B])(?=(?:channel|here|everyone|group)(?![\p{L}\p{N}_]))/giu;

export function escapeForSlack(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(BROADCAST, `$1${ZERO_WIDTH_JOINER}`);
}

/** A name for Slack's `username` field (plain text there): one line, at most 80 characters. */
export function slackUsername(name: string): string {
  const line = name.replace(/[\r\n\t]+/g, ' ').replace(BROADCAST, `$1${ZERO_WIDTH_JOINER}`).trim();
  return [...line].slice(0, 80).join('') || 'unknown';
}
