import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { OutgoingMessage, PluginInstance } from '../src/index.js';
import relayIrc from '../plugins/relay-irc/index.js';
import { IrcServer, IrcWatcher } from './helpers/irc-server.js';
import { RelayAlone } from './helpers/relay-alone.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * relay-irc's send path (#32 part 1): what a gateway line costs before it is written to IRC. The one
 * durable write in its way is its queue's; the line is written to SentKeys (`sent-keys.json`) as it
 * leaves the queue, once the server confirmed it. Sent once all the same: while queued, the queue's
 * key knows it; once sent, SentKeys does, across a restart too. The relay alone against a real ngircd.
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
      // Queued (durably: the queue's file), and nothing else written for it before it goes out.
      expect(queued(relay)).toBe(1);
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
});
