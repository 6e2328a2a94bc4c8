import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from 'irc-framework';
import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import type { OutgoingMessage, PluginInstance } from '../src/index.js';
import relayIrc from '../plugins/relay-irc/index.js';
import { IrcLink } from '../plugins/relay-irc/irc-link.js';
import { plainChannelLine } from '../plugins/relay-irc/plain-line.js';
import { UNPACED } from '../plugins/relay-irc/timing.js';
import { IrcServer, IrcWatcher } from './helpers/irc-server.js';
import { RelayAlone } from './helpers/relay-alone.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-irc's send path (#32 part 1): what a gateway line costs before it is written to IRC. The one
 * durable write in its way is its queue's, and it is written to IRC within the call that queued it when
 * nothing waits before it (`rate: off`); the line is written to SentKeys (`sent-keys.json`) as it
 * leaves the queue, once the server confirmed it. Sent once all the same: while queued, the queue's
 * key knows it; once sent, SentKeys does, across a restart too. The relay alone against a real ngircd.
 * On the way in, a plain channel line reaches the relay before irc-framework reads it.
 */

let irc: IrcServer | undefined;
let alone: RelayAlone | undefined;
let watcher: IrcWatcher | undefined;
afterEach(async () => {
  watcher?.close();
  await alone?.close();
  await irc?.close();
  irc = alone = watcher = undefined;
});

const CHANNEL = '#sendpath';

function fromOtherRelay(n: number): OutgoingMessage {
  return {
    key: `irc:#a@bot/relay-irc-2 x${n}`, gateway: 'g', kind: 'message', text: `line ${n}`,
    speaker: { platform: 'irc', id: 'uma!u@h', name: 'uma' },
    origin: { endpoint: 'irc:#a@bot/relay-irc-2', platform: 'irc', nativeId: `x${n}` },
    time: '2026-01-01T00:00:00.000Z', source: {},
  };
}

/** The ids SentKeys journalled (its file's push lines). */
function sentKeys(dir: string): string[] {
  let text = '';
  try {
    text = readFileSync(join(dir, 'state', 'sent-keys.json'), 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter(Boolean).flatMap((line) => (JSON.parse(line) as { push?: string[] }).push ?? []);
}

function queued(relay: PluginInstance): number {
  return (relay.status!() as { queues: { to_irc: number } }).queues.to_irc;
}

describe('relay-irc: a gateway line\'s send path', () => {
  test('one durable write before the IRC write (the queue\'s); SentKeys learns the line as it leaves the queue; sent once throughout, and after a restart',
    { timeout: 30_000 }, async () => {
      irc = await IrcServer.start();
      watcher = await IrcWatcher.connect(irc.port, 'seer', [CHANNEL]);
      alone = new RelayAlone((env) => relayIrc.create(relayIrc.options.parse({ server: '127.0.0.1', port: irc!.port, tls: false, nick: 'gwbot', channels: {}, rate: 'off' }), env), [CHANNEL]);
      let relay = await alone.start();
      await waitFor('the channel joined', () => (relay.stats!() as Record<string, number>).irc_joined_channels === 1, 10_000);
      const before = sentKeys(alone.dir).length;

      relay.endpoint!.send(CHANNEL, fromOtherRelay(1));
      // Queued (durably: the queue's file), and nothing else written for it before it goes out; with
      // `rate: off` and nothing waiting before it, written to IRC within the call that queued it.
      expect(queued(relay)).toBe(1);
      expect((relay.stats!() as Record<string, number>).in_flight_lines).toBe(1);
      expect(sentKeys(alone.dir).length).toBe(before);
      // Handed again while it waits (a retry, a redelivery): known by the queue's key.
      relay.endpoint!.send(CHANNEL, fromOtherRelay(1));
      expect(queued(relay)).toBe(1);

      await watcher.waitForLine(/PRIVMSG #sendpath :<u\u200bma> line 1$/);
      // Confirmed by the server (ngircd: the PONG after it): out of the queue, into SentKeys.
      await waitFor('the queue empty', () => queued(relay) === 0, 10_000);
      expect(sentKeys(alone.dir).length).toBe(before + 1);
      relay.endpoint!.send(CHANNEL, fromOtherRelay(1));
      expect(queued(relay)).toBe(0);

      relay = await alone.restart();
      relay.endpoint!.send(CHANNEL, fromOtherRelay(1));
      expect(queued(relay)).toBe(0);
      // A new line after the restart goes out; the old one never again.
      await waitFor('the channel joined', () => (relay.stats!() as Record<string, number>).irc_joined_channels === 1, 10_000);
      relay.endpoint!.send(CHANNEL, fromOtherRelay(2));
      await watcher.waitForLine(/PRIVMSG #sendpath :<u\u200bma> line 2$/);
      await waitFor('the queue empty', () => queued(relay) === 0, 10_000);
      expect(watcher.texts(CHANNEL).filter((text) => text.endsWith('line 1'))).toHaveLength(1);
      expect(sentKeys(alone.dir).length).toBe(before + 2);
    });

  test('a plain channel line reaches the relay before irc-framework reads it, once; an action, or a line to the bot, still through irc-framework', { timeout: 30_000 }, async () => {
    irc = await IrcServer.start();
    const events: string[] = [];
    const link = new IrcLink({
      server: '127.0.0.1', port: irc.port, tls: false, verify: true, nick: 'gwbot', username: 'gw', realname: 'gw',
      channels: [{ name: CHANNEL, key: CHANNEL, joinKey: undefined }], reconnect: { minMs: 100, maxMs: 100 },
    }, UNPACED, pino({ level: 'silent' }), {
      ready() {}, down() {}, joined() {}, left() {}, replayed() {},
      serverMessage() {},
      channelMessage: (line) => events.push(`relayed: ${line.kind} ${line.nick} ${line.text}`),
    });
    // irc-framework's first step for every line it reads (before it parses it): its `raw` event.
    (link as unknown as { client: Client }).client.on('raw', (event: { line: string; from_server: boolean }) => {
      const said = / PRIVMSG \S+ :(.*)$/.exec(event.line.trimEnd());
      if (event.from_server && said) events.push(`read by irc-framework: ${said[1]}`);
    });
    try {
      link.start();
      await waitFor('the channel joined', () => link.isJoined(CHANNEL), 10_000);
      watcher = await IrcWatcher.connect(irc.port, 'uma', [CHANNEL]);
      watcher.send(`PRIVMSG ${CHANNEL} :plain line`);
      watcher.send(`PRIVMSG ${CHANNEL} :\x01ACTION waves\x01`);
      watcher.send('PRIVMSG gwbot :to the bot alone');
      watcher.send(`PRIVMSG ${CHANNEL} :last`);
      await waitFor('the last line read', () => events.includes('read by irc-framework: last'), 10_000);
      expect(events).toEqual([
        'relayed: privmsg uma plain line', 'read by irc-framework: plain line',
        'read by irc-framework: \x01ACTION waves\x01', 'relayed: action uma waves',
        'read by irc-framework: to the bot alone', 'relayed: privmsg uma to the bot alone',
        'relayed: privmsg uma last', 'read by irc-framework: last',
      ]);
    } finally {
      await link.stop();
    }
  });

  test('plain channel lines are read as irc-framework reads them; anything else is left to it', () => {
    const joined = (channel: string) => channel.toLowerCase() === '#a';
    expect(plainChannelLine(':uma!~u@host.example PRIVMSG #A :hello: there  \r', joined)).toEqual({
      nick: 'uma', ident: '~u', hostname: 'host.example', target: '#A', message: 'hello: there  ', from_server: false, tags: {},
    });
    expect(plainChannelLine(':uma!u@h PRIVMSG #a :', joined)?.message).toBe('');
    for (const line of [
      '@time=2026-01-01T00:00:00.000Z :uma!u@h PRIVMSG #a :tagged', ':uma!u@h PRIVMSG #b :not joined', ':uma!u@h PRIVMSG @#a :status message',
      ':uma!u@h PRIVMSG #a :\x01ACTION waves\x01', ':uma!u@h PRIVMSG #a one-word', ':uma@h PRIVMSG #a :no ident', ':uma!u PRIVMSG #a :no host',
      ':irc.example PRIVMSG #a :from the server', ':uma!u@h NOTICE #a :a notice', 'PRIVMSG #a :no prefix', ':uma!u@h PRIVMSG  #a :two spaces',
      ':!u@h PRIVMSG #a :no nick', ':uma!@h PRIVMSG #a :empty ident', ':uma!u@ PRIVMSG #a :empty host',
    ]) expect(plainChannelLine(line, joined), line).toBeUndefined();
  });
});
