import { markdownLines, stripControls } from '../../src/index.js';

/**
 * Text for Mattermost that stays text (groupwire's markdownLines): its markdown (CommonMark with
 * tables, autolinks and hashtags) escaped with backslashes, and every mention (`@all`, `@channel`,
 * `@here`, `@someone`) defused, so a relayed line pings nobody and shows as it was typed.
 */

/** Mattermost takes at most 16,383 characters a post; a line is cut below that (its markup escaped). */
export const MAX_POST = 16_000;

const lines = markdownLines({ markup: /[\\*_~`[\]()#|<>]/g, maxLength: MAX_POST });

export { stripControls };
export const escapeForMattermost = lines.escape;
/** The line as the bot posts it: the template with the name and the text, both escaped (an action as `* name text`). */
export const renderLine = lines.renderLine;
/** The line as posted under the speaker's name (`override_username`): the text alone, an action in italics. */
export const renderText = lines.renderText;
/** A speaker's name as `override_username` (at most 64 characters, what Mattermost shows of a user name). */
export const overrideName = lines.speakerName;

/** A Mattermost post's text for the chat: as typed (markdown is the writer's), control characters out; a `/me` post without its italics. */
export function plainFromMattermost(message: string, action: boolean): string {
  let text = stripControls(message).trim();
  if (action && text.length >= 2 && text.startsWith('*') && text.endsWith('*')) text = text.slice(1, -1);
  return text;
}
