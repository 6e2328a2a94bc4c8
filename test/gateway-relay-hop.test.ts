import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { DurableQueue } from '../src/index.js';
import type { InboundItem } from '../plugins/relay-slack/intake.js';
import { FakeSlack } from './fakes/slack/fake-slack.js';
import { RELAY_PLUGIN } from './fakes/slack/harness.js';
import { TOKENS } from './fakes/slack/state.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, post, type BotSpec, type Env, type GatewaySpec, waitFor } from './helpers/supervisor.js';

/**
 * A line between relays of one bot goes from the gateway's intake straight to the other relays'
 * queues (docs/gateways.md, "How a line travels"): two relay-irc instances on an ngircd (#one, #two)
 * and relay-slack in two channels of the fake Slack, with the chat, in one gateway. Lines reach the
 * other relays while the bot's posts of them still wait in its outbox (no read of the chat's history
 * can have confirmed them); a line handed to the gateway again goes out once on each side and never
 * back to where it was said; `through_chat: true` keeps the older path, where a filter in the chain
 * keeps a relayed line from the other relays.
 */

const INDEX = pathToFileURL(join(resolve(fileURLToPath(new URL('..', import.meta.url))), 'src', 'index.ts')).href;
/** A filter: a plugin that ends the chain for any message, the bot's own posts included, whose text says `hidden`. */
const FILTER = `import { definePlugin } from ${JSON.stringify(INDEX)};
export default definePlugin({
  name: 'hide', ownPosts: true, options: { safeParse: (value) => ({ success: true, data: value ?? {} }) },
  create: () => ({ handle: (ctx, next) => (ctx.text.includes('hidden') ? undefined : next()) }),
});
`;

/**
 * A relay of a platform of its own that hands a line to the gateway while it starts (as the HTTP API's
 * intake or a catch-up may), before the relays after it in bots.yaml are running.
 */
const EARLY = `import { definePlugin } from ${JSON.stringify(INDEX)};
export default definePlugin({
  name: 'relay-early', options: { safeParse: (value) => ({ success: true, data: value ?? {} }) },
  platform: { name: 'early', channels: () => [] },
  create: (options, env) => ({
    start() {
      env.gateway.receive('lobby', { kind: 'message', text: 'said-while-starting', nativeId: 'early-1', speaker: { platform: 'early', id: 'eve', name: 'eve' } }).catch(() => {});
    },
    endpoint: { send() {} },
  }),
});
`;

const GENERAL = 'C0GENERAL1';
const RANDOM = 'C0RANDOM01';

let server: IrcServer | undefined;
let slack: FakeSlack | undefined;
let env: Env | undefined;
let alice: IrcWatcher | undefined;
let wendy: IrcWatcher | undefined;

afterEach(async () => {
  alice?.close();
  wendy?.close();
  await env?.close();
  await slack?.close();
  await server?.close();
  env = undefined;
});

/**
 * The bridge: the chat, #one (relay-irc), #two (relay-irc-2), Slack's general and random, and a filter
 * first in the chain; alice on #one, wendy on #two.
 */
async function bridge(bot: Partial<BotSpec> = {}, gateway: Partial<GatewaySpec> = {}, early = false): Promise<Env> {
  server = await IrcServer.start({ kind: 'ngircd' });
  slack = await FakeSlack.start();
  alice = await IrcWatcher.connect(server.port, 'alice', ['#one']);
  wendy = await IrcWatcher.connect(server.port, 'wendy', ['#two']);
  env = await makeEnv([]);
  writeFileSync(join(env.dir, 'hide.mjs'), FILTER);
  writeFileSync(join(env.dir, 'early.mjs'), EARLY);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    reply_rate: { per_second: 50, burst: 50 },
    ...bot,
    plugins: [
      { use: './hide.mjs' },
      ...(early ? [{ use: './early.mjs' }] : []),
      relayPlugin(server, { channels: {} }),
      relayPlugin(server, { channels: {}, nick: 'gwbottwo' }),
      { use: RELAY_PLUGIN, with: { token: TOKENS.bot, app_token: TOKENS.app, api_url: slack.apiUrl, channels: {} } },
    ],
  }], [{
    name: 'hop',
    endpoints: [{ chat: 'general' }, { irc: '#one', plugin: 'relay-irc' }, { irc: '#two', plugin: 'relay-irc-2' }, { slack: GENERAL }, { slack: RANDOM }, ...(early ? [{ early: 'lobby' }] : [])],
    ...gateway,
  }]);
  await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#one/i);
  await wendy.waitForLine(/^:gwbottwo!\S+ JOIN :?#two/i);
  await waitFor('the Slack socket', () => slack!.socket.openConnections().length > 0);
  return env;
}

const onIrc = (watcher: IrcWatcher, channel: string) => watcher.said.filter((s) => s.command === 'PRIVMSG' && s.target === channel && /^gwbot/.test(s.nick)).map((s) => s.text);
const inSlack = (channel: string) => slack!.posts.filter((p) => p.channel === channel).map((p) => p.text);
const inChat = async () => {
  const carol = env!.client('carol');
  return (await history(carol, (await chatOf(carol, 'general'))!.id)).map((m) => m.message);
};
const count = (lines: string[], word: string) => lines.filter((line) => line.endsWith(word)).length;

describe('a gateway hands a line from one relay straight to the others', () => {
  test('IRC → IRC and IRC → Slack, Slack → IRC and Slack → Slack arrive while the bot\'s chat posts of them still wait in its outbox', { timeout: 60_000 }, async () => {
    // One post a minute after the first: the chat gets the warm-up line, and the rest wait (durably) in the outbox.
    await bridge({ reply_rate: { per_second: 1 / 60, burst: 1 } });
    alice!.send('PRIVMSG #one :warm-up');
    await waitFor('the warm-up line in the chat', async () => count(await inChat(), 'warm-up') === 1);

    await post(env!.svc, 'general', 'carol', 'hidden-chat');
    for (const word of ['hop-one', 'hidden-irc', 'hop-two', 'hop-three']) alice!.send(`PRIVMSG #one :${word}`);
    slack!.message(GENERAL, 'U0ALICE001', 'from-slack');
    await waitFor('every line on every other relay', () =>
      ['hop-one', 'hop-two', 'hop-three', 'from-slack'].every((word) => count(onIrc(wendy!, '#two'), word) === 1 && count(inSlack(RANDOM), word) === 1) &&
      count(onIrc(alice!, '#one'), 'from-slack') === 1 && count(inSlack(GENERAL), 'hop-three') === 1);

    // Not one of them is in the chat yet: no post of the bot, so no read of the chat's history, stood between the relays.
    const chat = await inChat();
    expect(['hop-one', 'hop-two', 'hop-three', 'from-slack'].map((word) => count(chat, word))).toEqual([0, 0, 0, 0]);
    // In order per origin, once on each side, never back where it was said.
    expect(onIrc(wendy!, '#two').filter((text) => text.includes('hop-')).map((text) => text.replace(/^\S+ /, ''))).toEqual(['hop-one', 'hop-two', 'hop-three']);
    expect(inSlack(GENERAL).filter((text) => text.includes('hop-'))).toEqual(['hop-one', 'hop-two', 'hop-three']);
    expect(onIrc(alice!, '#one').filter((text) => text.includes('hop-') || text.includes('warm-up'))).toEqual([]);
    expect(inSlack(GENERAL).filter((text) => text.includes('from-slack'))).toEqual([]);
    // The filter keeps a chat message from every side, but a line between relays passed it by (docs/gateways.md).
    expect(count(onIrc(wendy!, '#two'), 'hidden-irc')).toBe(1);
    expect(count(inSlack(RANDOM), 'hidden-irc')).toBe(1);
    await post(env!.svc, 'general', 'carol', 'chat-marker');
    await waitFor('the chat marker on every relay', () => count(onIrc(alice!, '#one'), 'chat-marker') === 1 && count(onIrc(wendy!, '#two'), 'chat-marker') === 1 &&
      count(inSlack(GENERAL), 'chat-marker') === 1 && count(inSlack(RANDOM), 'chat-marker') === 1);
    expect([onIrc(alice!, '#one'), onIrc(wendy!, '#two'), inSlack(GENERAL), inSlack(RANDOM)].map((lines) => count(lines, 'hidden-chat'))).toEqual([0, 0, 0, 0]);
  });

  test('a line handed to the gateway again (a Slack message still queued when the bot was killed) goes out once on each side', { timeout: 60_000 }, async () => {
    await bridge();
    const said = slack!.message(GENERAL, 'U0ALICE001', 'only-once');
    const everywhere = async () => count(onIrc(alice!, '#one'), 'only-once') === 1 && count(onIrc(wendy!, '#two'), 'only-once') === 1 &&
      count(inSlack(RANDOM), 'only-once') === 1 && count(await inChat(), 'only-once') === 1;
    await waitFor('the line on every side', everywhere);
    await env!.supervisor!.stop();
    // As if the bot died after the gateway took the line and before the relay dropped it from its queue.
    const inbound = DurableQueue.open<InboundItem>(join(env!.stateDir, 'bots', 'bot0', 'plugins', 'relay-slack', 'from-slack.json'));
    inbound.push({ channel: GENERAL, user: 'U0ALICE001', text: 'only-once', ts: said.payload.event.ts as string });
    await env!.start();
    slack!.message(GENERAL, 'U0ALICE001', 'the-marker');
    await waitFor('the marker on every side', async () => count(onIrc(alice!, '#one'), 'the-marker') === 1 && count(onIrc(wendy!, '#two'), 'the-marker') === 1 &&
      count(inSlack(RANDOM), 'the-marker') === 1 && count(await inChat(), 'the-marker') === 1);
    // The relay handed both to the gateway after the restart: the line again, and the marker.
    const stats = env!.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>;
    expect(stats.bot0!.plugins['relay-slack']!.relayed_in).toBe(2);
    expect(DurableQueue.read<InboundItem>(join(env!.stateDir, 'bots', 'bot0', 'plugins', 'relay-slack', 'from-slack.json'))).toEqual([]);
    expect(await everywhere()).toBe(true);
    expect(inSlack(GENERAL).filter((text) => text.includes('only-once'))).toEqual([]);
  });

  test('through_chat: true keeps the older path: lines between relays go on from the bot\'s post in the chat, so the filter keeps them from the other relays', { timeout: 60_000 }, async () => {
    await bridge({}, { through_chat: true });
    for (const word of ['hidden-irc', 'shown-irc']) alice!.send(`PRIVMSG #one :${word}`);
    await waitFor('the shown line on the other relays', () => count(onIrc(wendy!, '#two'), 'shown-irc') === 1 && count(inSlack(RANDOM), 'shown-irc') === 1);
    // Lines of one origin keep their order: had the hidden line gone on, it would be there before the shown one.
    expect([onIrc(wendy!, '#two'), inSlack(GENERAL), inSlack(RANDOM)].map((lines) => count(lines, 'hidden-irc'))).toEqual([0, 0, 0]);
    expect(count(await inChat(), 'hidden-irc')).toBe(1);
  });

  test('a line a relay hands on while the bot\'s plugins still start (the relays after it not running yet) reaches them once they run, once each', { timeout: 60_000 }, async () => {
    await bridge({}, {}, true);
    await waitFor('the early line on every relay', () => count(onIrc(alice!, '#one'), 'said-while-starting') === 1 && count(onIrc(wendy!, '#two'), 'said-while-starting') === 1 &&
      count(inSlack(GENERAL), 'said-while-starting') === 1 && count(inSlack(RANDOM), 'said-while-starting') === 1);
    await post(env!.svc, 'general', 'carol', 'chat-marker');
    await waitFor('the chat marker on the relays', () => count(onIrc(alice!, '#one'), 'chat-marker') === 1 && count(inSlack(RANDOM), 'chat-marker') === 1);
    await waitFor('the early line in the chat', async () => count(await inChat(), 'said-while-starting') === 1);
    expect([onIrc(alice!, '#one'), onIrc(wendy!, '#two'), inSlack(GENERAL), inSlack(RANDOM)].map((lines) => count(lines, 'said-while-starting'))).toEqual([1, 1, 1, 1]);
  });
});
