import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from '../../src/gateway/message.js';
import { cleanToChatText, type ToChatFormat } from './format.js';
import { safeLine, safeName, stripIrcFormatting } from './irc-text.js';

/** A PRIVMSG or ACTION said in a channel, as irc-framework reports it. */
export interface IrcChannelLine {
  kind: 'privmsg' | 'action';
  nick: string;
  ident: string;
  hostname: string;
  channel: string;
  text: string;
  /** The message's IRCv3 tags (`msgid`, `time`, ...), when the server sends any. */
  tags?: Record<string, string | boolean>;
  /** The server's time of the line (server-time), in ms, when it gives one. */
  time?: number;
  /**
   * The id to hand on when the server gives no msgid: made of the line's server-time, nick and text
   * (catch-up.ts), the same when the line is seen live and in a replay.
   */
  id?: string;
}

/** irc-framework's privmsg and action events (node_modules/irc-framework/src/commands/handlers/messaging.js). */
export interface ChannelEvent {
  nick: string;
  ident?: string;
  hostname?: string;
  target: string;
  message: string;
  from_server: boolean;
  tags?: Record<string, string | boolean>;
  time?: number;
  batch?: { id?: string; type?: string };
}

export function channelLine(kind: IrcChannelLine['kind'], event: ChannelEvent): IrcChannelLine {
  return {
    kind, nick: event.nick, ident: event.ident ?? '', hostname: event.hostname ?? '', channel: event.target, text: event.message,
    tags: event.tags, time: typeof event.time === 'number' ? event.time : undefined,
  };
}

/**
 * Native ids for lines the server gives none (IRC itself has no message ids; IRCv3 `msgid` is used
 * when the server sends it): the time in base 36, this run's random tag and a counter, unique across
 * restarts without anything stored.
 */
export class LineIds {
  private counter = 0;
  private readonly run = randomBytes(3).toString('hex');

  next(): string {
    this.counter += 1;
    return `${Date.now().toString(36)}-${this.run}${this.counter.toString(36)}`;
  }
}

/**
 * A channel line as what a gateway takes: the speaker as `nick!ident@host` (what access rules name,
 * `irc:nick!user@host`), the text without IRC's formatting codes or control characters, and the line
 * as the chat shows it in the relay's to_chat format (made when first read). Undefined when nothing is
 * left of the text.
 */
export function incomingFromIrc(line: IrcChannelLine, format: ToChatFormat, ids: LineIds): IncomingMessage | undefined {
  const text = safeLine(stripIrcFormatting(line.text)).trim();
  if (!text) return undefined;
  const nick = safeName(stripIrcFormatting(line.nick), 'someone');
  let chatText: string | undefined;
  let made = false;
  const part = (value: string) => safeName(value, '*').replace(/ /g, '');
  const msgid = line.tags?.msgid;
  // IRCv3 `+draft/reply`: the msgid (in this channel) of the line this one answers.
  const replyTo = line.tags?.['+draft/reply'];
  return {
    kind: line.kind === 'action' ? 'action' : 'message',
    text,
    speaker: { platform: 'irc', id: `${part(line.nick)}!${part(line.ident)}@${part(line.hostname)}`, name: nick },
    nativeId: typeof msgid === 'string' && msgid !== '' ? msgid : line.id ?? ids.next(),
    // Made when first read: in a gateway, for the line's post into the chat, which comes after the other
    // relays wrote the line out; not in their way (#32 part 1). A relay may set it (a late line's mark).
    get chatText(): string | undefined {
      if (!made) chatText = cleanToChatText(line.kind, nick, line.channel, text, format);
      made = true;
      return chatText;
    },
    set chatText(value: string | undefined) {
      chatText = value;
      made = true;
    },
    time: new Date(line.time ?? Date.now()).toISOString(),
    ...(typeof replyTo === 'string' && replyTo !== '' ? { replyTo } : {}),
  };
}
