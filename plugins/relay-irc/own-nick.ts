import { ircLower } from './routes.js';

/**
 * Whether a nick is this relay's: the one it has now, the one it asked for, or that one with `_`s added
 * (what it takes when its nick is in use, nick-keeper.ts). An earlier connection of the relay may still
 * speak under either while a new one is up (a worker that lost the bot, docs/scale-out.md), and a
 * channel's replayed history holds the lines of every earlier connection: none of them is a person.
 */
export function isOwnNick(nick: string, wanted: string, current: string): boolean {
  const folded = ircLower(nick);
  const base = ircLower(wanted);
  if (folded === ircLower(current) || folded === base) return true;
  if (!folded.startsWith(base) || folded.length === base.length) return false;
  for (let i = base.length; i < folded.length; i += 1) if (folded[i] !== '_') return false;
  return true;
}
