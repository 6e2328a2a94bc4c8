import type { MapRecord, MessageMap } from '../../src/store/message-map.js';

/**
 * Realistic message-map traffic for the restart bench and the map's memory figure: one bot in a
 * gateway of the chat, an IRC channel and a Slack channel; lines said in turn on IRC, in the chat and
 * on Slack, each with its two copies (the chat's bus copy and the other relay's), texts of 100
 * characters, 40 speakers.
 */
const BOT = 'bridge';
const CHAT = `chat:4711@${BOT}`;
const IRC = `irc:#general@${BOT}/relay-irc`;
const SLACK = `slack:C0123456789@${BOT}/relay-slack`;
const SPEAKERS = 40;
const TEXT = 'the quick brown fox jumps over the lazy dog while the bridge relays every line it hears, in order ok';

/** The i-th line's text: 100 characters, distinct per line (so no two records share one string). */
export function textOf(i: number): string {
  const tail = ` #${i}`;
  return TEXT.slice(0, 100 - tail.length) + tail;
}

/** Writes line i (begin and its copies) into the map, as the gateway router does. */
export function writeLine(map: MessageMap, i: number): MapRecord {
  const side = i % 3;
  const who = i % SPEAKERS;
  const chatId = `${1_000_000 + i}/2026-11-${String(1 + (i % 28)).padStart(2, '0')}T10:00:00.000Z`;
  const slackTs = `${1_780_000_000 + i}.${String(i % 1_000_000).padStart(6, '0')}`;
  const ircId = `m${i.toString(36)}`;
  if (side === 0) {
    const record = map.begin({
      key: `${IRC} ${ircId}`, gateway: 'lobby', origin: IRC, platform: 'irc', nativeId: ircId, kind: 'message',
      speaker: { platform: 'irc', id: `nick${who}!~user${who}@host${who}.example.org`, name: `nick${who}` }, text: textOf(i),
    });
    map.addCopy(record.key, CHAT, { id: chatId, bus: true, first: true });
    map.addCopy(record.key, SLACK, { id: slackTs });
    return record;
  }
  if (side === 1) {
    const record = map.begin({
      key: `${CHAT} ${chatId}`, gateway: 'lobby', origin: CHAT, platform: 'chat', nativeId: chatId, kind: 'message',
      speaker: { platform: 'chat', id: `${9000 + who}`, name: `Member ${who}`, email: `member${who}@example.org` }, text: textOf(i),
    });
    map.addCopy(record.key, IRC, { id: ircId });
    map.addCopy(record.key, SLACK, { id: slackTs });
    return record;
  }
  const record = map.begin({
    key: `${SLACK} ${slackTs}`, gateway: 'lobby', origin: SLACK, platform: 'slack', nativeId: slackTs, kind: 'message',
    speaker: { platform: 'slack', id: `U0${who}ABCDEF`, name: `slacker ${who}` }, text: textOf(i),
  });
  map.addCopy(record.key, CHAT, { id: chatId, bus: true, first: true });
  map.addCopy(record.key, IRC, { id: ircId });
  return record;
}
