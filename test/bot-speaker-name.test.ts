import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cleanEnv, runCli } from './helpers/cli.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, makeEnv, type BotSpec, type Env, waitFor } from './helpers/supervisor.js';

/**
 * The bot speaks under one name everywhere (#36 item 12): its answers go to a real ngircd channel and
 * to the HTTP API's event stream under the name the chat shows for it (the account's display name,
 * "Demo Bot"), not under its bots.yaml name (`bridge`); bots.yaml's `speaker_name:` chooses another
 * name, and a reload applies it.
 */

const TOKEN = 'reader-token-0123456789abcdef';

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;
let apiBase: string;
let stream: { lines: Array<{ speaker: { name: string }; text: string }>; close(): void };

/** The bot's lines in #general as alice read them, the zero-width spaces that keep nicks from highlighting taken out. */
const ircSaid = () => alice.texts('#general', 'gwbot').map((text) => text.replaceAll('\u200b', ''));
const streamSaid = () => stream.lines.map((line) => `<${line.speaker.name}> ${line.text}`);

function bridge(extra: Partial<BotSpec> = {}): BotSpec {
  return {
    name: 'bridge',
    chats: [{ chat: 'general' }],
    reply_rate: { per_second: 50, burst: 50 },
    plugins: [
      { use: 'responder' },
      relayPlugin(server, { channels: { general: '#general' } }),
      { use: 'http-api', with: { listen: { host: '127.0.0.1', port: 0 }, channels: { general: 'ops' }, clients: [{ name: 'reader', token: TOKEN }] } },
    ],
    ...extra,
  };
}

/** Reads the channel's event stream (text/event-stream, parsed by hand) into `lines` until closed. */
async function openStream(url: string): Promise<typeof stream> {
  const stopper = new AbortController();
  const answer = await fetch(url, { headers: { accept: 'text/event-stream', authorization: `Bearer ${TOKEN}` }, signal: stopper.signal });
  expect(answer.status).toBe(200);
  const lines: Array<{ speaker: { name: string }; text: string }> = [];
  void (async () => {
    let buffer = '';
    try {
      for await (const chunk of answer.body!) {
        buffer += Buffer.from(chunk).toString('utf8');
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
          if (data && !block.split('\n').some((line) => line.startsWith('event:') && !line.endsWith('message'))) lines.push(JSON.parse(data));
        }
      }
    } catch {
      // Closed by the test.
    }
  })();
  return { lines, close: () => stopper.abort() };
}

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
  env = await makeEnv([]);
  env.writeConfig([bridge()]);
  const supervisor = await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#general/i);
  const stats = () => (supervisor.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bridge!.plugins['http-api']!;
  apiBase = `http://127.0.0.1:${await waitFor('the HTTP API listening', () => stats().port)}`;
  stream = await openStream(`${apiBase}/gateways/ops/events`);
}, 60_000);

afterAll(async () => {
  stream?.close();
  alice?.close();
  await env?.close();
  await server?.close();
});

describe('the bot\'s own answers', () => {
  test('!ping from IRC is answered as <Demo Bot> pong on IRC and on the HTTP stream, as the chat shows the bot', { timeout: 30_000 }, async () => {
    alice.send('PRIVMSG #general :!ping');
    await waitFor('pong on IRC and on the stream', () => ircSaid().some((t) => t.endsWith('pong')) && streamSaid().some((t) => t.endsWith('pong')), 20_000);
    const carol = env.client('carol');
    const pong = (await history(carol, (await chatOf(carol, 'general'))!.id)).find((m) => m.message === 'pong')!;
    expect(pong.display_name).toBe('Demo Bot');
    expect(ircSaid().filter((t) => t.endsWith('pong'))).toEqual(['<Demo Bot> pong']);
    expect(streamSaid().filter((t) => t.endsWith('pong'))).toEqual(['<Demo Bot> pong']);
    expect(stream.lines.find((line) => line.text === 'pong')!.speaker.name).toBe('Demo Bot');
  });

  test('speaker_name: in bots.yaml names it instead; a reload applies it', { timeout: 30_000 }, async () => {
    env.writeConfig([bridge({ speaker_name: 'Relay Helper' } as Partial<BotSpec>)]);
    const outcome = await env.supervisor!.reload(env.configFile);
    expect(outcome.applied).toBe(true);
    alice.send('PRIVMSG #general :!ping');
    await waitFor('the second pong on IRC and on the stream', () =>
      ircSaid().filter((t) => t.endsWith('pong')).length === 2 && streamSaid().filter((t) => t.endsWith('pong')).length === 2, 20_000);
    expect(ircSaid().filter((t) => t.endsWith('pong'))).toEqual(['<Demo Bot> pong', '<Relay Helper> pong']);
    expect(streamSaid().filter((t) => t.endsWith('pong'))).toEqual(['<Demo Bot> pong', '<Relay Helper> pong']);
    // `groupwire check` says which name the bot speaks under.
    const checked = await runCli(['check', env.configFile], cleanEnv());
    expect(checked.stdout).toContain('bridge: 1 chat(s), plugins: responder, relay-irc, http-api; its own lines go out as "Relay Helper" (speaker_name)');
  });
});
