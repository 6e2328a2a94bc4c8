import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GroupsClient, type ChatMessage } from '../src/api/index.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { DEMO, startTestService, type TestService } from './helpers/service.js';
import { adminOk, chatOf, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * A chat's history that goes backwards, against the real local service: the service started again from
 * its seed while the bot keeps its state dir (the demo's second `npm start`), once with the chat's
 * `created` kept beside the cursor and once with a cursor file from before it was kept. Each time the
 * bot warns once, answers `!ping`, the transcript grows past a reset marker, and the IRC relay (ngircd)
 * relays the new messages.
 */

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;
let tlsDir: string;
/** The service of the moment (the first is env.svc; later ones replace it on the same port). */
let svc: TestService;
const extra: TestService[] = [];
const clients: GroupsClient[] = [];

const transcript = () => join(env.dir, 'transcripts', 'demo', 'general');
const jsonlLines = () => {
  const files = readdirSync(transcript()).filter((name) => name.endsWith('.jsonl')).sort();
  return files.flatMap((name) => readFileSync(join(transcript(), name), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)));
};
const resetWarnings = () => env.log.lines.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('chat history reset'));
const clientOf = (who: keyof typeof DEMO) => {
  const made = new GroupsClient({ baseUrl: svc.baseUrl, ca: svc.service.ca, credentials: { email: DEMO[who][0], password: DEMO[who][1] } });
  clients.push(made);
  return made;
};
/** The bot's answers in #general, newest last. */
const botSaid = async () => {
  const bob = clientOf('bob');
  const chat = (await chatOf(bob, 'general'))!;
  const all: ChatMessage[] = [];
  for await (const m of bob.paginate<ChatMessage>('getchathistory', { chat_id: chat.id, sort_dir: 'asc', limit: 100 })) all.push(m);
  return all.filter((m) => m.user_name === 'bot' || m.display_name?.toLowerCase().includes('bot')).map((m) => m.message);
};

/** Stops the bot, starts the service again from its seed on the same port (same CA), starts the bot. */
async function serviceFromScratch(edit?: () => void): Promise<void> {
  await env.supervisor!.stop();
  const port = svc.service.port;
  await svc.close();
  svc = await startTestService({ port, tlsDir });
  extra.push(svc);
  edit?.();
  await env.start();
}

beforeAll(async () => {
  tlsDir = mkdtempSync(join(tmpdir(), 'groupwire-reset-tls-'));
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
  env = await makeEnv([], { tlsDir });
  svc = env.svc;
  writeFileSync(join(env.dir, 'ca.pem'), svc.service.ca);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [
      // One file per chat, not per day: the seed dates its chat lines up to 30 minutes back, so shortly
      // after midnight UTC the new history's first lines would belong to yesterday's file, before the marker.
      { use: 'logger', with: { dir: './transcripts', path: '{group}/{chat}/transcript.{ext}', format: ['jsonl', 'text'], flush_interval_ms: 50 } },
      relayPlugin(server, { channels: { general: '#general' } }),
      { use: 'responder', with: { builtins: true, max_age: 600_000 } },
    ],
  }]);
  await env.start();
}, 60_000);

afterAll(async () => {
  alice?.close();
  await Promise.all(clients.map((c) => c.close()));
  await env?.close();
  for (const s of extra) await s.close().catch(() => undefined);
  await server?.close();
  rmSync(tlsDir, { recursive: true, force: true });
});

describe('a chat whose history goes backwards', () => {
  test('the service starts again from its seed: one warning, then pong, a transcript past a marker, IRC relays', async () => {
    // The first life: the cursor, the marks and the files go well past what the seed holds.
    await post(svc, 'general', 'carol', 'before {n}', 12);
    await post(svc, 'general', 'bob', '!ping');
    await waitFor('the first pong', async () => (await botSaid()).filter((m) => /pong/i.test(m)).length === 1, 30_000);
    await waitFor('the first life on IRC', () => alice.texts('#general').some((t) => t.includes('before 12')), 30_000);
    await waitFor('the first life in the transcript', () => jsonlLines().some((m) => m.message === '!ping'));
    const firstLife = jsonlLines().length;
    expect(firstLife).toBeGreaterThanOrEqual(13);

    await serviceFromScratch();
    await post(svc, 'general', 'bob', '!ping');
    await post(svc, 'general', 'carol', 'after the reset');
    await waitFor('a pong in the new history', async () => (await botSaid()).some((m) => /pong/i.test(m)), 30_000);
    await waitFor('the new lines on IRC', () => alice.texts('#general').some((t) => t.includes('after the reset')), 30_000);
    await waitFor('the new lines in the transcript', () => jsonlLines().some((m) => m.message === 'after the reset'));

    const lines = jsonlLines();
    const marker = lines.findIndex((m) => m.object === 'history_reset');
    expect(marker).toBeGreaterThanOrEqual(firstLife);
    expect(lines[marker]).toMatchObject({ reason: 'recreated', msg_num: 0 });
    // After the marker: the new history from msg_num 1 (the seed's lines, then ours), each once, in order.
    const after = lines.slice(marker + 1).map((m) => m.msg_num as number);
    expect(after[0]).toBe(1);
    expect(after).toEqual([...after].sort((a, b) => a - b));
    expect(new Set(after).size).toBe(after.length);
    expect(lines.slice(marker + 1).map((m) => m.message)).toEqual(expect.arrayContaining(['Welcome to #general!', '!ping', 'after the reset']));
    // The text transcript says it in words, and grows on (each format's file is flushed on its own).
    const textFile = () => readFileSync(join(transcript(), readdirSync(transcript()).find((n) => n.endsWith('.txt'))!), 'utf8');
    const text = await waitFor('the new lines in the text transcript', () => {
      const now = textFile();
      return now.slice(now.indexOf('history was reset')).includes('after the reset') ? now : undefined;
    });
    expect(text).toMatch(/-- history was reset at .*start again at 1\n/);
    // Said once, with what the bot does.
    await waitFor('the logger caught up', () => jsonlLines().some((m) => /pong/i.test(m.message ?? '')) && lines.length > 0);
    expect(resetWarnings()).toHaveLength(1);
    expect(resetWarnings()[0]).toMatchObject({ level: 40, chat: 'general', reason: 'recreated' });
    expect(resetWarnings()[0]!.cursor).toBeGreaterThanOrEqual(13);
  }, 120_000);

  test('a cursor file from before `created` was kept: the history on connect, below the cursor, says it', async () => {
    await post(svc, 'general', 'carol', 'filler {n}', 15);
    await waitFor('the filler in the transcript', () => jsonlLines().some((m) => m.message === 'filler 15'));
    const cursorsFile = join(env.stateDir, 'bots', 'bot0', 'cursors.jsonl');
    await serviceFromScratch(() => {
      // As an older groupwire wrote it: only chat ids and msg_nums.
      const old = readFileSync(cursorsFile, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line))
        .filter((entry) => typeof entry.m === 'number').map((entry) => JSON.stringify({ c: entry.c, m: entry.m }));
      writeFileSync(cursorsFile, `${old.join('\n')}\n`);
    });
    await waitFor('the warning', () => resetWarnings().length === 1, 30_000);
    expect(resetWarnings()[0]).toMatchObject({ reason: 'behind', newest: 3 });
    await post(svc, 'general', 'bob', '!ping');
    await post(svc, 'general', 'carol', 'after the second reset');
    await waitFor('a pong', async () => (await botSaid()).some((m) => /pong/i.test(m)), 30_000);
    await waitFor('IRC', () => alice.texts('#general').some((t) => t.includes('after the second reset')), 30_000);
    await waitFor('the transcript', () => jsonlLines().some((m) => m.message === 'after the second reset'));
    expect(jsonlLines().filter((m) => m.object === 'history_reset').map((m) => m.reason)).toEqual(['recreated', 'behind']);
    // The reset is over: a reconnect finds the cursor and the history in agreement, and says nothing.
    await adminOk(svc, 'faults/drop-sockets', {});
    await post(svc, 'general', 'carol', 'after a drop');
    await waitFor('after the drop', () => jsonlLines().some((m) => m.message === 'after a drop'));
    expect(resetWarnings()).toHaveLength(1);
  }, 120_000);

  test('a chat deleted and made again under its subject (a new id for the same bots.yaml entry)', async () => {
    const mo = clientOf('mo');
    const old = (await chatOf(mo, 'general'))!;
    await mo.deleteChat({ chat_id: old.id });
    await adminOk(svc, 'chats', {
      group: 'demo', owner: 'mo@example.com', subject: 'general', members: ['bob@example.com', 'carol@example.com', 'bot@example.com'],
    });
    await env.supervisor!.stop();
    await env.start();
    await waitFor('the warning', () => resetWarnings().length === 1, 30_000);
    expect(resetWarnings()[0]).toMatchObject({ reason: 'replaced', previousChatId: old.id });
    await post(svc, 'general', 'bob', '!ping');
    await post(svc, 'general', 'carol', 'in the chat made again');
    await waitFor('a pong', async () => (await botSaid()).some((m) => /pong/i.test(m)), 30_000);
    await waitFor('IRC', () => alice.texts('#general').some((t) => t.includes('in the chat made again')), 30_000);
    // The pong is the bot's own post: it reaches the logger through the chain in its place, and may be
    // written in the flush after carol's line.
    const newHistory = () => {
      const all = jsonlLines();
      return all.slice(all.findLastIndex((m) => m.object === 'history_reset') + 1).map((m) => m.message);
    };
    await waitFor('the transcript', () => newHistory().includes('in the chat made again') && newHistory().includes('pong'));
    const lines = jsonlLines();
    const marker = lines.findLastIndex((m) => m.object === 'history_reset');
    expect(lines[marker]).toMatchObject({ reason: 'replaced' });
    expect(lines.slice(marker + 1).map((m) => m.msg_num)).toEqual([1, 2, 3]);
    expect(resetWarnings()).toHaveLength(1);
  }, 120_000);
});
