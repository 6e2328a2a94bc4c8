import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { channelLine } from '../plugins/relay-irc/incoming.js';
import { IrcToChat } from '../plugins/relay-irc/to-chat.js';
import type { ChatMessage } from '../src/api/types.js';
import type { ChatInfo } from '../src/chat/chat-info.js';
import type { PlannedGateway } from '../src/gateway/gateway-plan.js';
import { GatewayRouter, type GatewayBot } from '../src/gateway/gateway-router.js';
import type { IncomingMessage, OutgoingMessage } from '../src/gateway/message.js';
import { DEFAULT_MAP_LIMITS, MessageMap } from '../src/store/message-map.js';
import { countingStorage } from './helpers/counting-file-storage.js';

/**
 * The gateway's intake between two relays of one bot (#32 part 1): what is written before the other
 * relay's sender writes the line out. The relay's queue takes the line at intake; its sender goes on in
 * the microtasks after the intake returns to the event loop. The message map's note of the line is
 * written one turn later (it is in the map's memory at once), and before the line's post into the chat.
 * Counted on the map's journal (lines appended), not timed.
 */

const dir = mkdtempSync(join(tmpdir(), 'gw-intake-order-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const chat: ChatInfo = { id: '17', subject: 'general', groupId: '1', groupName: 'demo', chatsubId: '5' };
const gateway: PlannedGateway = {
  name: 'general', implied: false, throughChat: false,
  endpoints: [
    { kind: 'chat', bot: 'b', chat: 'general', direction: 'inout' },
    { kind: 'relay', bot: 'b', instance: 'relay-irc', platform: 'irc', channel: '#a', channelKey: '#a', direction: 'inout' },
    { kind: 'relay', bot: 'b', instance: 'relay-irc-2', platform: 'irc', channel: '#b', channelKey: '#b', direction: 'inout' },
  ],
};

function said(n: number): IncomingMessage {
  return { kind: 'message', text: `line ${n}`, speaker: { platform: 'irc', id: 'uma!u@h', name: 'uma' }, nativeId: `x${n}`, chatText: `<uma> line ${n}` };
}

/**
 * A relay whose sender writes a line out several microtasks after its queue took it (its durable mark
 * awaited, then its client library's own steps): Discord, Matrix, Slack and the other HTTP relays.
 */
const LIBRARY_HOPS = 4;

function later(hops: number, then: () => void): void {
  if (hops === 0) then();
  else queueMicrotask(() => later(hops - 1, then));
}

/** One bot whose relay-irc-2 notes, for each line, the map's journal lines when it queued it and when its sender ran (a microtask later). */
function world(slow?: { instance: string; events: string[] }) {
  const storage = countingStorage();
  const map = MessageMap.open(join(dir, `map-${Math.random().toString(36).slice(2)}.jsonl`), DEFAULT_MAP_LIMITS, storage);
  const events: string[] = [];
  const sent: OutgoingMessage[] = [];
  const bot: GatewayBot = {
    name: 'b',
    speaker: () => ({ platform: 'chat', id: '1', name: 'bot' }),
    chat: (key) => (key === 'general' || key === '17' ? chat : undefined),
    starting: () => false,
    postRelayed: (_chat, text) => {
      events.push(`post "${text}": map lines ${storage.appended}`);
      return Promise.resolve({ msg_num: 1, id: '1', message: text, type: 'chat_msg_type_normal' } as ChatMessage);
    },
    endpoint: (instance) => ({
      send(_channel, out) {
        if (slow && instance === slow.instance) {
          events.push(`queued for ${instance}`);
          later(LIBRARY_HOPS, () => events.push(`written by ${instance}`));
          return;
        }
        if (instance !== 'relay-irc-2') return;
        sent.push(out);
        events.push(`queued ${out.text}: map lines ${storage.appended}`);
        // relay-irc's sender wakes in a microtask (its drain awaits a promise the queue's push resolves).
        queueMicrotask(() => events.push(`written ${out.text}: map lines ${storage.appended}`));
      },
    }),
    pluginsStarted: () => Promise.resolve(),
    log: pino({ level: 'silent' }),
  };
  const planned: PlannedGateway = slow
    ? { ...gateway, endpoints: [...gateway.endpoints, { kind: 'relay', bot: 'b', instance: slow.instance, platform: 'discord', channel: '77', channelKey: '77', direction: 'inout' }] }
    : gateway;
  const router = new GatewayRouter([planned], map, pino({ level: 'silent' }));
  router.attach(bot);
  return { map, storage, events, sent, port: router.port('b', 'relay-irc') };
}

describe('the gateway\'s intake between relays', () => {
  test('the other relay writes the line out before the map\'s note is appended; the note comes before the chat\'s post', async () => {
    const { map, storage, events, sent, port } = world();
    const before = storage.appended;
    await port.receive('#a', said(1));
    expect(events.map((e) => e.replace(/\d+$/, (n) => String(Number(n) - before)))).toEqual([
      'queued line 1: map lines 0',
      'written line 1: map lines 0',
      'post "<uma> line 1": map lines 1',
    ]);
    expect(sent).toHaveLength(1);
    expect(map.get(sent[0]!.origin.endpoint + ' x1')).toBeDefined();
  });

  test('a line handed again while its note waits is known to the map already: handed on once, noted once', async () => {
    const { storage, sent, port } = world();
    const before = storage.appended;
    const first = port.receive('#a', said(2));
    const again = port.receive('#a', said(2));
    await Promise.all([first, again]);
    await port.receive('#a', said(2));
    expect(sent.map((out) => out.text)).toEqual(['line 2']);
    expect(storage.appended - before).toBe(1);
  });

  test('relay-irc\'s chat text of a line is made after the other relay wrote the line out, before the chat\'s post', async () => {
    const { events, port } = world();
    // The to_chat template is read when relay-irc renders the line's chat text: that read is noted in order.
    const format = { get privmsg() { events.push('chat text made'); return '<{nick}> {text}'; }, action: '* {nick} {text}' };
    const toChat = new IrcToChat(() => port, format, [], () => false, pino({ level: 'silent' }));
    toChat.onChannelMessage(channelLine('privmsg', { nick: 'uma', ident: 'u', hostname: 'h', target: '#a', message: 'line 3', from_server: false }));
    await vi.waitFor(() => expect(events.some((e) => e.startsWith('post'))).toBe(true));
    expect(events.map((e) => e.replace(/: map lines \d+$/, ''))).toEqual([
      'queued line 3',
      'written line 3',
      'chat text made',
      'post "<uma> line 3"',
    ]);
    expect(toChat.counters.posted).toBe(1);
  });

  test('the chat\'s post is made within the intake\'s microtasks, before a relay whose send waits on more of them: not a turn later (#32 part 1, platforms)', async () => {
    const { events, port } = world({ instance: 'relay-discord', events: [] });
    // Scheduled before the line comes: it runs on the event loop's next turn, after every microtask of the intake.
    const atNextTurn = new Promise<string[]>((resolve) => setImmediate(() => resolve([...events])));
    const taken = port.receive('#a', said(4));
    const seenAtNextTurn = await atNextTurn;
    await taken;
    const steps = events.map((e) => e.replace(/: map lines \d+$/, ''));
    expect(steps).toEqual([
      'queued line 4',
      'queued for relay-discord',
      'written line 4',
      'post "<uma> line 4"',
      'written by relay-discord',
    ]);
    expect(seenAtNextTurn.filter((e) => e.startsWith('post'))).toHaveLength(1);
  });
});
