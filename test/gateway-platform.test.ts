import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import type { IncomingMessage, OutgoingMessage } from '../src/index.js';
import { chatOf, history, makeEnv, post, probes, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The endpoint interface, through a platform written the way a user writes one: a plugin of a few
 * lines (`platform` in its definition, `endpoint.send`, `env.gateway.receive`) over an in-memory
 * "platform". Two of them and a chat in one gateway: every line reaches every other side once and
 * never its origin; thread replies and edits find their counterparts through the message map; a line
 * taken twice is posted once; the chain sees relayed lines with their remote sender.
 */

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const INDEX = pathToFileURL(join(ROOT, 'src', 'index.ts')).href;

interface Sent extends OutgoingMessage {
  channel: string;
  nativeId: string;
}

interface MemoryPlatform {
  sent: Record<string, Sent[]>;
  say: Record<string, (channel: string, message: IncomingMessage) => Promise<void>>;
}

const platform = (): MemoryPlatform => {
  const global = globalThis as { __memoryPlatform?: MemoryPlatform };
  global.__memoryPlatform ??= { sent: {}, say: {} };
  return global.__memoryPlatform;
};

const PLUGIN = `import { definePlugin } from ${JSON.stringify(INDEX)};
const hub = (globalThis.__memoryPlatform ??= { sent: {}, say: {} });
const passThrough = { safeParse: (value) => ({ success: true, data: value ?? {} }) };
export default definePlugin({
  name: 'relay-memory',
  options: passThrough,
  platform: {
    name: 'memory',
    channels: (options) => Object.entries(options.channels ?? {}).map(([chat, channel]) => ({ chat, channel, direction: 'inout' })),
  },
  create(options, env) {
    let count = 0;
    hub.say[options.id] = (channel, message) => env.gateway.receive(channel, message);
    return {
      endpoint: {
        send(channel, message) {
          const nativeId = options.id + '-' + (++count);
          (hub.sent[options.id] ??= []).push({ ...message, source: undefined, channel, nativeId });
          env.gateway.posted(message.key, channel, nativeId);
        },
      },
    };
  },
});
`;

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
  const hub = platform();
  hub.sent = {};
  hub.say = {};
});

const speaker = (name: string) => ({ platform: 'memory', id: `id-${name}`, name });
const said = (nativeId: string, text: string, extra: Partial<IncomingMessage> = {}): IncomingMessage =>
  ({ kind: 'message', text, speaker: speaker('uma'), nativeId, ...extra });

async function setUp(plugins: Array<{ use: string; with?: Record<string, unknown> }> = []) {
  env = await makeEnv([]);
  writeFileSync(join(env.dir, 'relay-memory.mjs'), PLUGIN);
  const recorder = env.probe('chain', 'record', { ownPosts: true });
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [
      ...plugins,
      { use: './relay-memory.mjs', with: { id: 'a', channels: { general: '#a' } } },
      { use: './relay-memory.mjs', with: { id: 'b', channels: { general: '#b' } } },
      { use: recorder, with: { key: 'chain' } },
    ],
  }]);
  await env.start();
  const bot = env.client('bot');
  const general = (await chatOf(bot, 'general'))!;
  const chatTexts = async () => (await history(bot, general.id)).map((m) => m.message);
  return { env, chatTexts };
}

describe('gateways: the endpoint interface', () => {
  test('relays of one bot mapping one chat are one gateway: every line once on every other side, never back', { timeout: 60_000 }, async () => {
    const { env, chatTexts } = await setUp();
    const hub = platform();
    await hub.say.a!('#a', said('m1', 'hello from a'));
    await post(env.svc, 'general', 'alice', 'hello from the chat');
    await hub.say.b!('#b', said('m1', 'hello from b', { speaker: speaker('bea') }));
    await waitFor('every line on every side', () =>
      (hub.sent.a ?? []).length === 2 && (hub.sent.b ?? []).length === 2, 20_000);
    await waitFor('both lines in the chat', async () => (await chatTexts()).filter((t) => t.startsWith('<')).length === 2);

    expect((await chatTexts()).filter((t) => t.includes('hello'))).toEqual(['<uma> hello from a', 'hello from the chat', '<bea> hello from b']);
    // b's line goes to a from the intake, alice's from the chain once the bot read it: either may come first.
    expect(hub.sent.a!.map((s) => [s.speaker.name, s.text, s.origin.platform])).toEqual(expect.arrayContaining([['Alice Owner', 'hello from the chat', 'chat'], ['bea', 'hello from b', 'memory']]));
    expect(hub.sent.b!.map((s) => [s.speaker.name, s.text, s.origin.platform])).toEqual([['uma', 'hello from a', 'memory'], ['Alice Owner', 'hello from the chat', 'chat']]);

    // The chain saw the relayed lines as the bot's own posts with their remote sender, answerable there.
    // (The other relay had the lines at once: the chain sees the bot's posts of them when they come back.)
    await waitFor('the chain saw both relayed posts', () => (probes().seen.chain ?? []).filter((s) => s.own === 'memory').length === 2);
    const seen = probes().seen.chain!;
    const relayed = seen.filter((s) => s.own === 'memory');
    expect(relayed.map((s) => [s.sender, s.answerable])).toEqual([['memory:uma', true], ['memory:bea', true]]);
  });

  test('a line taken twice (a retry) is posted once; thread replies and edits reach their counterparts', { timeout: 60_000 }, async () => {
    const { chatTexts } = await setUp();
    const hub = platform();
    await hub.say.a!('#a', said('t1', 'the start of a thread about tea'));
    await hub.say.a!('#a', said('t1', 'the start of a thread about tea'));
    await waitFor('the line on b', () => (hub.sent.b ?? []).length === 1);
    await hub.say.a!('#a', said('t2', 'green, please', { replyTo: 't1', speaker: speaker('zed') }));
    await hub.say.a!('#a', said('t1', 'the start of a thread about coffee', { kind: 'edit', revision: 'r1' }));
    await hub.say.a!('#a', said('t1', '', { kind: 'delete' }));
    await waitFor('reply, edit and deletion on b', () => (hub.sent.b ?? []).length === 4, 20_000);

    const [start, reply, edit, deletion] = hub.sent.b!;
    expect(start!.text).toBe('the start of a thread about tea');
    expect(reply).toMatchObject({ kind: 'message', text: 'green, please', replyTo: start!.nativeId, quote: { name: 'uma', text: 'the start of a thread about tea' } });
    expect(edit).toMatchObject({ kind: 'edit', text: 'the start of a thread about coffee', target: start!.nativeId });
    expect(deletion).toMatchObject({ kind: 'delete', target: start!.nativeId });

    await waitFor('four lines in the chat', async () => (await chatTexts()).length >= 4);
    const texts = await chatTexts();
    expect(texts.filter((t) => t.includes('tea') || t.includes('coffee') || t.includes('green') || t.includes('deleted'))).toEqual([
      '<uma> the start of a thread about tea',
      '> uma: the start of a thread about tea\n<zed> green, please',
      '(edit) <uma> the start of a thread about coffee',
      // The notice quotes what was last said: the edit.
      '* uma deleted a message: "the start of a thread about coffee"',
    ]);
    expect(hub.sent.a ?? []).toEqual([]);
  });

  test('a reply that names what it answers (namesParent) keeps its thread on the other side and gets no quote there or in the chat', { timeout: 60_000 }, async () => {
    const { chatTexts } = await setUp();
    const hub = platform();
    await hub.say.a!('#a', said('p1', 'Picnic on Saturday'));
    await hub.say.a!('#a', said('p2', 're: Picnic on Saturday — bread', { replyTo: 'p1', namesParent: true, speaker: speaker('zed') }));
    await hub.say.a!('#a', said('p3', 'cheese', { replyTo: 'p1', speaker: speaker('yan') }));
    await waitFor('the three lines on b', () => (hub.sent.b ?? []).length === 3, 20_000);
    const [parent, named, plain] = hub.sent.b!;
    expect(named).toMatchObject({ replyTo: parent!.nativeId, text: 're: Picnic on Saturday — bread' });
    expect(named!.quote).toBeUndefined();
    // Without it, a reply is quoted as before.
    expect(plain).toMatchObject({ replyTo: parent!.nativeId, quote: { name: 'uma', text: 'Picnic on Saturday' } });
    await waitFor('three lines in the chat', async () => (await chatTexts()).filter((t) => t.includes('Picnic') || t.includes('cheese')).length >= 3);
    expect((await chatTexts()).filter((t) => t.includes('Picnic') || t.includes('cheese'))).toEqual([
      '<uma> Picnic on Saturday',
      '<zed> re: Picnic on Saturday — bread',
      '> uma: Picnic on Saturday\n<yan> cheese',
    ]);
  });

  test('a relayed line the logger reads back from the chat\'s history names who said it (relayed_from), as one that came round the chain does', { timeout: 60_000 }, async () => {
    const { env, chatTexts } = await setUp();
    await platform().say.a!('#a', said('h1', 'said before the logger came'));
    await waitFor('the line in the chat', async () => (await chatTexts()).includes('<uma> said before the logger came'));
    await env.supervisor!.stop();
    // The same bot again, now with a logger that writes the chat's whole history on its first transcript.
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [
        { use: 'logger', with: { dir: './transcripts', format: 'jsonl', include_own: true, full_history: true, flush_interval_ms: 50 } },
        { use: './relay-memory.mjs', with: { id: 'a', channels: { general: '#a' } } },
      ],
    }]);
    await env.start();
    const entries = async () => {
      const files = readdirSync(join(env.dir, 'transcripts'), { recursive: true }).map(String).filter((f) => f.endsWith('.jsonl'));
      return files.flatMap((f) => readFileSync(join(env.dir, 'transcripts', f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)));
    };
    const entry = await waitFor('the line in the transcript', async () =>
      (await entries().catch(() => [])).find((e: any) => e.message === '<uma> said before the logger came'), 20_000);
    expect(entry.relayed_from).toEqual({ platform: 'memory', id: 'id-uma', name: 'uma', gateway: 'general' });
    // A member's message read from the history carries none.
    expect((await entries()).filter((e: any) => e.relayed_from !== undefined)).toHaveLength(1);
  });

  test('!ping said on a remote side is answered once, on every side', { timeout: 60_000 }, async () => {
    const { chatTexts } = await setUp([{ use: 'responder' }]);
    const hub = platform();
    await hub.say.a!('#a', said('p1', '!ping'));
    await waitFor('pong on both sides', () =>
      (hub.sent.a ?? []).some((s) => s.text === 'pong') && (hub.sent.b ?? []).some((s) => s.text === 'pong'), 20_000);
    await hub.say.b!('#b', said('marker', 'marker'));
    await waitFor('the marker on a', () => (hub.sent.a ?? []).some((s) => s.text === 'marker'));
    expect((await chatTexts()).filter((t) => t === 'pong')).toHaveLength(1);
    expect(hub.sent.a!.filter((s) => s.text === 'pong')).toHaveLength(1);
    expect(hub.sent.b!.filter((s) => s.text === '!ping' || s.text === 'pong').map((s) => s.text)).toEqual(['!ping', 'pong']);
    expect(hub.sent.a!.find((s) => s.text === 'pong')!.speaker.platform).toBe('chat');
  });
});
