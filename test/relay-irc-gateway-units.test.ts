import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, test } from 'vitest';
import type { OutgoingMessage } from '../src/gateway/message.js';
import type { ChatMessage } from '../src/api/types.js';
import { textRoom } from '../plugins/relay-irc/format.js';
import { channelLine, incomingFromIrc, LineIds } from '../plugins/relay-irc/incoming.js';
import { IrcLink } from '../plugins/relay-irc/irc-link.js';
import { relayOptions } from '../plugins/relay-irc/options.js';
import { Outbound } from '../plugins/relay-irc/outbound.js';
import { renderForIrc } from '../plugins/relay-irc/render.js';
import { Routes } from '../plugins/relay-irc/routes.js';
import { SentKeys } from '../plugins/relay-irc/sent-keys.js';
import { UNPACED } from '../plugins/relay-irc/timing.js';
import { ToIrc } from '../plugins/relay-irc/to-irc.js';

/** The relay as a gateway endpoint: how gateway lines look on IRC, what an IRC line hands the gateway, sending once. */

const ZW = '\u200b';
const format = { template: '{prefix}<{name}> {text}', antiPing: true, roomBytes: textRoom('gwbot', '#general', 400), maxLines: 0 };
const chat = { id: '17', subject: 'general', groupId: '1', groupName: 'demo', chatsubId: '5' };

function line(change: Partial<OutgoingMessage> & { msgNum?: number } = {}): OutgoingMessage {
  const { msgNum = 1, ...rest } = change;
  return {
    key: `chat:17@bot ${msgNum}`, gateway: 'main', kind: 'message', text: 'hello',
    speaker: { platform: 'chat', id: '42', name: 'Carol Member' },
    origin: { endpoint: 'chat:17@bot', platform: 'chat', nativeId: String(msgNum) },
    time: '2026-01-01T00:00:00.000Z',
    source: { chat, message: { msg_num: msgNum, id: String(msgNum), message: 'hello', type: 'chat_msg_type_normal' } as ChatMessage },
    ...rest,
  };
}

describe('relay-irc: gateway lines as IRC text', () => {
  const CAROL = `<C${ZW}arol M${ZW}ember>`;

  test('a message: the to_irc format with the prefix, markup reduced, one IRC line per line', () => {
    expect(renderForIrc(line({ text: 'one\n\ntwo' }), '', format)).toEqual([`${CAROL} one`, `${CAROL} two`]);
    expect(renderForIrc(line({ text: '<p>a <b>b</b></p>' }), '[general]', format)).toEqual([`[general] ${CAROL} a b`]);
    // {user} is the speaker's id: for a person from IRC their nick!user@host.
    const fromIrc = line({ speaker: { platform: 'irc', id: 'alice!~a@host', name: 'alice' } });
    expect(renderForIrc(fromIrc, '', { ...format, template: '[{user}] {text}' })).toEqual(['[alice!~a@host] hello']);
  });

  test('an action is "* name text", keeping the prefix', () => {
    expect(renderForIrc(line({ kind: 'action', text: 'waves' }), '[general]', format)).toEqual([`[general] * C${ZW}arol M${ZW}ember waves`]);
    expect(renderForIrc(line({ kind: 'action', text: 'waves' }), '', { ...format, antiPing: false, template: '{name}: {text}' })).toEqual(['* Carol Member waves']);
  });

  test('a reply puts a short quote first; the quote is one line, cut to about 40 characters', () => {
    const quote = { name: 'bob', text: 'the first line of what bob said\nand a second line that is long' };
    expect(renderForIrc(line({ text: 'yes', quote }), '', format)).toEqual([`${CAROL} (re b${ZW}ob: the first line of what bob said and a se…) yes`]);
    expect(renderForIrc(line({ text: 'ok', quote: { name: 'Bob\r\nQUIT', text: 'short' } }), '', { ...format, antiPing: false })).toEqual(['<Carol Member> (re Bob QUIT: short) ok']);
  });

  test('an edit is one short follow-up line; a deletion says so; joins, leaves and topics are dropped', () => {
    expect(renderForIrc(line({ kind: 'edit', text: 'fixed\ntypo' }), '', format)).toEqual([`${CAROL} (edit) fixed typo`]);
    const long = renderForIrc(line({ kind: 'edit', text: 'word '.repeat(200) }), '', format);
    expect(long).toHaveLength(1);
    expect(long[0]!.endsWith('…')).toBe(true);
    expect(Buffer.byteLength(long[0]!)).toBeLessThanOrEqual(format.roomBytes);
    expect(renderForIrc(line({ kind: 'delete', text: 'whatever it was' }), '', format)).toEqual([`* C${ZW}arol M${ZW}ember deleted a message`]);
    expect(renderForIrc(line({ kind: 'join' }), '', format)).toEqual([]);
    expect(renderForIrc(line({ kind: 'leave' }), '', format)).toEqual([]);
    expect(renderForIrc(line({ kind: 'topic', text: 'release Friday' }), '', format)).toEqual([]);
  });

  test('files come as links, one line each (fileLines), refused ones say why; nothing in a line can end the IRC command', () => {
    const files = [
      { id: 'a'.repeat(32), name: 'plan.pdf', contentType: 'application/pdf', size: 10, image: false, url: 'https://files.example/plan.pdf' },
      { id: 'c'.repeat(32), name: 'cat.png', contentType: 'image/png', size: 10, image: true, url: 'https://files.example/cat.png' },
      { id: 'b'.repeat(32), name: 'no link', contentType: 'text/plain', size: 1, image: false },
    ];
    const refusedFiles = [{ name: 'setup.exe', reason: 'type not allowed (.exe)' }];
    expect(renderForIrc(line({ text: 'see', files, refusedFiles }), '', format)).toEqual([`${CAROL} see`,
      `${CAROL} [file: plan.pdf https://files.example/plan.pdf]`, `${CAROL} [image: cat.png https://files.example/cat.png]`, `${CAROL} [file: no link]`,
      `${CAROL} [a file was not relayed: setup.exe: type not allowed (.exe)]`]);
    // A line of files alone: only the files, no empty line before them.
    expect(renderForIrc(line({ text: '', files: files.slice(1, 2) }), '', format)).toEqual([`${CAROL} [image: cat.png https://files.example/cat.png]`]);
    const attack = renderForIrc(line({ text: 'a\r\nQUIT :x\u0000\u0001', quote: { name: 'e\rve', text: 'JOIN\n#x' }, kind: 'message' }), '', format);
    for (const text of attack) expect(text).not.toMatch(/[\r\n\0\x01]/);
  });
});

describe('relay-irc: IRC lines for the gateway', () => {
  const toChat = { privmsg: '<{nick}> {text}', action: '* {nick} {text}' };
  const event = { nick: 'alice', ident: '~al', hostname: 'host.example', target: '#general', message: '\x02hi\x02 there', from_server: false };

  test('the speaker is nick!ident@host, the text without codes, the chat text in the to_chat format', () => {
    const ids = new LineIds();
    const message = incomingFromIrc(channelLine('privmsg', { ...event, time: Date.parse('2026-02-03T04:05:06Z') }), toChat, ids)!;
    expect(message).toMatchObject({
      kind: 'message', text: 'hi there', speaker: { platform: 'irc', id: 'alice!~al@host.example', name: 'alice' },
      chatText: '<alice> hi there', time: '2026-02-03T04:05:06.000Z',
    });
    const action = incomingFromIrc(channelLine('action', { ...event, message: 'waves' }), { ...toChat, action: '** {nick} ({channel}) {text}' }, ids)!;
    expect(action).toMatchObject({ kind: 'action', text: 'waves', chatText: '** alice (#general) waves' });
    expect(incomingFromIrc(channelLine('privmsg', { ...event, message: '\x0304\x03 ' }), toChat, ids)).toBeUndefined();
  });

  test('the nativeId is the server\'s msgid when it sends one, else one of our own, never the same twice', () => {
    const ids = new LineIds();
    expect(incomingFromIrc(channelLine('privmsg', { ...event, tags: { msgid: 'abc123' } }), toChat, ids)!.nativeId).toBe('abc123');
    const made = Array.from({ length: 500 }, () => incomingFromIrc(channelLine('privmsg', event), toChat, ids)!.nativeId);
    const other = incomingFromIrc(channelLine('privmsg', event), toChat, new LineIds())!.nativeId;
    expect(new Set([...made, other]).size).toBe(501);
    for (const id of made) expect(id).toMatch(/^[0-9a-z]+-[0-9a-f]{6}[0-9a-z]+$/);
  });
});

describe('relay-irc: a gateway line is queued once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-irc-send-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The relay's sending side as it is after a start: real queue files and marks, a link that is never connected. */
  function open() {
    const log = pino({ level: 'silent' });
    const options = relayOptions.parse({ server: '127.0.0.1', port: 6667, tls: false, nick: 'gwbot', channels: { general: '#general', random: { channel: '#general', prefix: '[r]' } } });
    const routes = new Routes(options.channels);
    const channels = routes.channels(['#other']);
    const link = new IrcLink({
      server: '127.0.0.1', port: 6667, tls: false, verify: true, nick: 'gwbot', username: 'gw', realname: 'gw', channels, reconnect: { minMs: 100, maxMs: 100 },
    }, UNPACED, log, { ready() {}, down() {}, joined() {}, left() {}, serverMessage() {}, channelMessage() {}, replayed() {} });
    const outbound = new Outbound({ dataDir: dir, nick: 'gwbot', channels, maxLines: 100, warnAt: 0.5, inFlight: 5, maxAttempts: 2, confirmTimeoutMs: 60_000 }, link, UNPACED, log);
    return { toIrc: new ToIrc(options, routes, outbound, SentKeys.open(dir), log), outbound };
  }

  test('the same line twice, or again after a restart, goes out once per channel', () => {
    const first = open();
    first.toIrc.send('#general', line({ msgNum: 1 }));
    first.toIrc.send('#GENERAL', line({ msgNum: 1 }));
    first.toIrc.send('#other', line({ msgNum: 1 }));
    first.toIrc.send('#general', line({ msgNum: 2, text: 'two' }));
    expect(first.outbound.queued).toBe(3);
    const again = open();
    again.toIrc.send('#general', line({ msgNum: 2, text: 'two' }));
    again.toIrc.send('#other', line({ msgNum: 1 }));
    again.toIrc.send('#other', line({ msgNum: 2, text: 'two' }));
    expect(again.outbound.queued).toBe(4);
    expect(again.toIrc.counters).toEqual({ relayed_messages: 1, queued_lines: 1, refused_queue_full: 0 });
  });

  test('a line from another relay goes out once however it comes: from the intake (with or without its chat), again, round the chat, after a restart', () => {
    const relay = open();
    const before = relay.outbound.queued;
    const fromIrc = (source: OutgoingMessage['source']) => line({
      key: JSON.stringify(['irc:#a@bot/relay-irc-2 x1', 'irc:#other@bot/relay-irc']), text: 'from the other network',
      speaker: { platform: 'irc', id: 'uma!u@h', name: 'uma' }, origin: { endpoint: 'irc:#a@bot/relay-irc-2', platform: 'irc', nativeId: 'x1' }, source,
    });
    relay.toIrc.send('#other', fromIrc({}));
    relay.toIrc.send('#other', fromIrc({ chat }));
    relay.toIrc.send('#other', fromIrc({ chat, message: { msg_num: 9, id: '9', message: '<uma> from the other network', type: 'chat_msg_type_normal' } as ChatMessage }));
    expect(relay.outbound.queued).toBe(before + 1);
    // A line the chain sent on before the intake did (an upgrade): known under its chat.
    const older = line({ key: JSON.stringify(['irc:#a@bot/relay-irc-2 x2', 'irc:#other@bot/relay-irc']), origin: { endpoint: 'irc:#a@bot/relay-irc-2', platform: 'irc', nativeId: 'x2' } });
    relay.toIrc.send('#other', older);
    relay.toIrc.send('#other', { ...older, source: { chat } });
    expect(relay.outbound.queued).toBe(before + 2);
    const again = open();
    again.toIrc.send('#other', fromIrc({ chat }));
    again.toIrc.send('#other', { ...older, source: { chat } });
    expect(again.outbound.queued).toBe(before + 2);
  });

  test('lines are told apart by key, not msg_num: an answer in parts, then the message\'s own line, then a late answer all go out', () => {
    const relay = open();
    const before = relay.outbound.queued;
    relay.toIrc.send('#other', line({ msgNum: 5, key: 'answer 5 part 1', text: 'pong (1/2)' }));
    relay.toIrc.send('#other', line({ msgNum: 5, key: 'answer 5 part 2', text: 'pong (2/2)' }));
    relay.toIrc.send('#other', line({ msgNum: 5, key: 'line 5' }));
    relay.toIrc.send('#other', line({ msgNum: 6, key: 'line 6' }));
    relay.toIrc.send('#other', line({ msgNum: 5, key: 'answer 5 late', text: 'slow answer' }));
    relay.toIrc.send('#other', line({ msgNum: 5, key: 'answer 5 part 2', text: 'pong (2/2)' }));
    expect(relay.outbound.queued).toBe(before + 5);
  });

  test('after a history reset the chat\'s lines are new, in every channel, even under the keys of old ones', () => {
    const relay = open();
    const before = relay.outbound.queued;
    relay.toIrc.chatReset('17');
    // The same keys as before the reset (a service that lost its data gives its ids again): new lines.
    relay.toIrc.send('#general', line({ msgNum: 1, text: 'new history' }));
    relay.toIrc.send('#other', line({ msgNum: 1, text: 'new history' }));
    relay.toIrc.send('#other', line({ msgNum: 1, text: 'new history' }));
    expect(relay.outbound.queued).toBe(before + 2);
    // Remembered across a restart, reset included.
    const again = open();
    again.toIrc.send('#other', line({ msgNum: 1, text: 'new history' }));
    expect(again.outbound.queued).toBe(before + 2);
  });
});
