import { markdownLines, stripControls } from '../../src/index.js';

/**
 * Text for Rocket.Chat that stays text (groupwire's markdownLines): its markdown (`*bold*`, `_italic_`,
 * `~strike~`, code, links, `#room` links, KaTeX `$`, quotes, lists) escaped with backslashes, and every
 * mention (`@all`, `@here`, `@someone`) defused, so a relayed line pings nobody and shows as it was typed.
 */

/** Rocket.Chat's default Message_MaxAllowedSize is 5,000 characters; a line is cut below that (its markup escaped). */
export const MAX_MESSAGE = 4_900;

const lines = markdownLines({ markup: /[\\*_~`[\]()#|<>$]/g, maxLength: MAX_MESSAGE });

export { stripControls };
export const escapeForRocketchat = lines.escape;
/** The line as the bot sends it: the template with the name and the text, both escaped (an action as `* name text`). */
export const renderLine = lines.renderLine;
/** The line as sent under the speaker's name (`alias`): the text alone, an action in italics. */
export const renderText = lines.renderText;
/** A speaker's name as `alias`: one line, its bidi closed, at most 64 characters, never a mention. */
export const aliasName = lines.speakerName;

/** A Rocket.Chat message's text for the chat: as typed (markdown is the writer's), control characters out. */
export function plainFromRocketchat(message: string): string {
  return stripControls(message).trim();
}
