import { closeBidi } from '../../src/index.js';
import { antiPing, normalizeLineBreaks, safeLine, safeName, splitUtf8, stripIrcFormatting, utf8Bytes } from './irc-text.js';
import { markupToText } from './markup.js';

/** Fills `{token}`s in one pass, so a value that itself contains "{text}" is not filled again. */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (whole, token: string) => values[token] ?? whole);
}

/**
 * The room IRC leaves for a PRIVMSG's text, in bytes: 512 minus CRLF, minus what the server puts in
 * front when it passes the line on (":nick!user@host PRIVMSG #channel :"), with room for a host of 63
 * and a user name of 10, and for a nick grown by a few "_" when the configured one was taken.
 */
export function textRoom(nick: string, channel: string, maxLineBytes: number): number {
  const relayed = 1 + nick.length + 3 + 1 + 10 + 1 + 63 + ' PRIVMSG '.length + utf8Bytes(channel) + ' :'.length;
  return Math.min(maxLineBytes, 510 - relayed);
}

export interface ToIrcFormat {
  template: string;
  antiPing: boolean;
  /** The room for one PRIVMSG's text (textRoom). */
  roomBytes: number;
  /** 0: no limit. */
  maxLines: number;
  /** The whole text as ONE line, cut with "…" when it does not fit (a short note, like an edit's). */
  oneLine?: boolean;
}

export interface ChatMessageLike {
  message: string;
  display_name?: string;
  user_name?: string;
}

/**
 * A chat message as the PRIVMSG texts to send: markup reduced to text, then attributed (textToIrcLines).
 */
export function chatToIrcLines(message: ChatMessageLike, prefix: string, format: ToIrcFormat): string[] {
  return textToIrcLines(markupToText(message.message), message, prefix, format);
}

/**
 * Plain text as the PRIVMSG texts to send: one IRC line per line of the text (blank lines left out),
 * long lines cut to the room left by the name and prefix, every line attributed ("<name> text"),
 * nothing in it that could end the command.
 */
export function textToIrcLines(text: string, who: Omit<ChatMessageLike, 'message'>, prefix: string, format: ToIrcFormat): string[] {
  const shownName = safeName(who.display_name || who.user_name || '', 'someone');
  const values = {
    prefix: prefix ? `${safeLine(prefix)} ` : '',
    name: closeBidi(format.antiPing ? antiPing(shownName) : shownName),
    user: safeName(who.user_name || '', shownName),
  };
  // The template was checked to be one line without controls; the values were made safe above.
  const [head = '', tail = ''] = format.template.split('{text}').map((part) => fill(part, values));
  const room = Math.max(40, format.roomBytes - utf8Bytes(head) - utf8Bytes(tail));
  const lines = normalizeLineBreaks(text).split('\n').map(safeLine).filter((line) => line.trim() !== '');
  if (format.oneLine) {
    const pieces = splitUtf8(lines.map((line) => line.trim()).join(' '), room - utf8Bytes(ELLIPSIS));
    return pieces.length === 0 ? [] : [head + pieces[0] + (pieces.length > 1 ? ELLIPSIS : '') + tail];
  }
  let texts = lines.flatMap((line) => splitUtf8(line, room)).map((piece) => head + piece + tail);
  if (format.maxLines > 0 && texts.length > format.maxLines) {
    const left = texts.length - format.maxLines + 1;
    texts = [...texts.slice(0, format.maxLines - 1), `${head}[… ${left} more line${left === 1 ? '' : 's'} not relayed]${tail}`];
  }
  return texts;
}

const ELLIPSIS = '…';

export interface ToChatFormat {
  privmsg: string;
  action: string;
}

/** A PRIVMSG or ACTION from IRC as chat text, IRC formatting and controls removed; undefined when nothing is left. */
export function ircToChatText(kind: 'privmsg' | 'action', nick: string, channel: string, text: string, format: ToChatFormat): string | undefined {
  const clean = safeLine(stripIrcFormatting(text)).trim();
  if (!clean) return undefined;
  return cleanToChatText(kind, safeName(stripIrcFormatting(nick), 'someone'), channel, clean, format);
}

/** As ircToChatText, for a nick and a text already made safe (safeName, safeLine, no formatting) and not empty. */
export function cleanToChatText(kind: 'privmsg' | 'action', nick: string, channel: string, text: string, format: ToChatFormat): string {
  return fill(kind === 'action' ? format.action : format.privmsg, { nick: closeBidi(nick), channel, text: closeBidi(text) });
}
