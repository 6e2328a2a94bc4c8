import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { alreadyTaken } from '../plugins/relay-irc/history-replay.js';
import { queueFile } from '../plugins/relay-irc/channel-outbox.js';
import { DurableQueue } from '../src/store/durable-queue.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * A line the relay sent just before its connection died (the bot killed, the link cut) may have been
 * taken by the server without the relay hearing so. Where the server replays the channel's history on
 * join (InspIRCd's +H) and confirms lines with msgids, the relay reads the replay before sending, and
 * what it shows was taken is not sent again.
 */

describe('alreadyTaken: what the history shows of the queue\'s head', () => {
  const replay = [
    { text: '<a> old', msgid: 'm1' },
    { text: '<a> hi', msgid: 'm2' },
    { text: '<a> hi', msgid: 'm3' },
    { text: '<a> next', msgid: 'm4' },
  ];

  test('only lines after the last one confirmed count, matched in order from the head', () => {
    expect(alreadyTaken(['<a> hi', '<a> next', '<a> later'], replay, 'm2')).toEqual({ count: 2, last: 'm4' });
    expect(alreadyTaken(['<a> hi', '<a> hi', '<a> next'], replay, 'm1')).toEqual({ count: 3, last: 'm4' });
    // The same text as a line confirmed before is not taken for it: only what follows the mark counts.
    expect(alreadyTaken(['<a> hi'], replay, 'm4')).toEqual({ count: 0 });
    expect(alreadyTaken(['<a> other', '<a> next'], replay, 'm3')).toEqual({ count: 0 });
  });

  test('without the mark in the history (too short, or lost with a restart) nothing is settled', () => {
    expect(alreadyTaken(['<a> hi', '<a> next'], replay, 'gone')).toEqual({ count: 0 });
    expect(alreadyTaken(['<a> hi', '<a> next'], replay, undefined)).toEqual({ count: 0 });
    expect(alreadyTaken(['<a> hi'], [], 'm1')).toEqual({ count: 0 });
  });
});

describe('relay-irc on a server with channel history (inspircd +H)', () => {
  let server: IrcServer | undefined;
  let env: Env | undefined;
  const watchers: IrcWatcher[] = [];

  afterEach(async () => {
    for (const watcher of watchers.splice(0)) watcher.close();
    await env?.close();
    await server?.close();
    env = undefined;
    server = undefined;
  });

  /**
   * The state a killed bot leaves: its connection said `said` (the server took them, the channel's
   * history keeps them) and died before the confirmations came; its queue still holds `queued`, with
   * the msgid of the last line it had confirmed (`mark`, 'said' for the first of `said`).
   */
  async function leftByAKilledBot(said: string[], queued: string[], mark: 'said' | 'unknown') {
    server = await IrcServer.start({ kind: 'inspircd', history: true });
    const op = await IrcWatcher.connect(server.port, 'alice', ['#general']);
    watchers.push(op);
    op.send('MODE #general +H 100:1h');
    await op.waitForLine(/ MODE #general \+H/);
    const ghost = await IrcWatcher.connect(server.port, 'gwbot', ['#general'], undefined, ['message-tags', 'echo-message']);
    for (const text of said) ghost.send(`PRIVMSG #general :${text}`);
    const first = await ghost.waitForLine(new RegExp(`PRIVMSG #general :${said[0]}$`));
    await ghost.waitForLine(new RegExp(`PRIVMSG #general :${said.at(-1)}$`));
    ghost.close();
    await op.waitForLine(/^:gwbot!\S+ QUIT/);
    const msgid = /(?:^@|;)msgid=([^; ]+)/.exec(first)?.[1];
    expect(msgid).toBeTruthy();

    env = await makeEnv([]);
    const dataDir = join(env.stateDir, 'bots', 'bot0', 'plugins', 'relay-irc');
    mkdirSync(dataDir, { recursive: true });
    const queue = DurableQueue.open<{ src: string; text: string }>(queueFile(dataDir, '#general'));
    queue.push(...queued.map((text, n) => ({ src: `c:${n}`, text })));
    queue.setNote({ last: mark === 'said' ? msgid : 'a-msgid-the-history-does-not-have' });
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server)] }]);
    await env.start();
    return op;
  }

  const stats = () => (env!.supervisor!.stats() as any).bot0.plugins['relay-irc'] as Record<string, number>;

  test('lines the history shows were taken are not sent again; the rest go, in order', { timeout: 30_000 }, async () => {
    const op = await leftByAKilledBot(['<Bob> one', '<Bob> two', '<Bob> three'], ['<Bob> two', '<Bob> three', '<Bob> four'], 'said');
    await waitFor('the last line on IRC', () => op.texts('#general', 'gwbot').includes('<Bob> four'));
    await waitFor('the queue empty', () => stats().queued_lines === 0);
    expect(op.texts('#general', 'gwbot')).toEqual(['<Bob> one', '<Bob> two', '<Bob> three', '<Bob> four']);
    expect(stats().to_irc_taken_before_lines).toBe(2);
    expect(stats().to_irc_delivered_lines).toBe(3);
    expect(env!.log.lines.some((line) => /history shows lines sent before the connection died were taken/.test(String(line.msg)))).toBe(true);
  });

  test('when the history does not reach back to the last line confirmed, every line goes again (at least once)', { timeout: 30_000 }, async () => {
    const op = await leftByAKilledBot(['<Bob> one', '<Bob> two'], ['<Bob> two', '<Bob> three'], 'unknown');
    await waitFor('the last line on IRC', () => op.texts('#general', 'gwbot').includes('<Bob> three'));
    await waitFor('the queue empty', () => stats().queued_lines === 0);
    expect(op.texts('#general', 'gwbot')).toEqual(['<Bob> one', '<Bob> two', '<Bob> two', '<Bob> three']);
    expect(stats().to_irc_taken_before_lines).toBe(0);
  });
});
