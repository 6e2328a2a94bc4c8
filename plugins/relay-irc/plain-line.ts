import type { ChannelEvent } from './incoming.js';

/**
 * A plain channel line as irc-framework would report it (its `privmsg` event), read straight from the
 * line the server sent: `:nick!ident@host PRIVMSG <channel> :text`, with no IRCv3 tags, a full prefix,
 * a channel `isJoined` knows and a text that is not CTCP. Anything else (tags: server-time, msgid, a
 * batch; an ACTION; a status-message target such as `@#chan`; odd spacing) is undefined and left to
 * irc-framework alone.
 *
 * Why (#32 part 1): irc-framework takes some 80 µs a line on a loaded machine before its `privmsg`
 * event (a clone of the command, its ping timer set twice, the event copied for its `message` event,
 * two middleware passes), and the relay-to-relay hop of a gateway waits for it. A linear scan, no
 * regular expression.
 */
export function plainChannelLine(raw: string, isJoined: (channel: string) => boolean): ChannelEvent | undefined {
  const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  if (line.charCodeAt(0) !== 0x3a /* ':' */) return undefined;
  const prefixEnd = line.indexOf(' ');
  if (prefixEnd < 0 || !line.startsWith(' PRIVMSG ', prefixEnd)) return undefined;
  const bang = line.indexOf('!');
  const at = bang < 0 ? -1 : line.indexOf('@', bang);
  if (bang <= 1 || at < 0 || at > prefixEnd || at === bang + 1 || at === prefixEnd - 1) return undefined;
  const targetStart = prefixEnd + ' PRIVMSG '.length;
  const targetEnd = line.indexOf(' ', targetStart);
  if (targetEnd <= targetStart || line.charCodeAt(targetEnd + 1) !== 0x3a) return undefined;
  const target = line.slice(targetStart, targetEnd);
  const message = line.slice(targetEnd + 2);
  if (message.startsWith('\x01') || !isJoined(target)) return undefined;
  return {
    nick: line.slice(1, bang), ident: line.slice(bang + 1, at), hostname: line.slice(at + 1, prefixEnd),
    target, message, from_server: false, tags: {},
  };
}
