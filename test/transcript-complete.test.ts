import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { dayOf } from '../plugins/logger/time.js';
import { envFor, runCli, succeeded } from './helpers/cli.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Transcripts that are complete, with the real local service, a real ngircd and the CLI as a child
 * process: the bot's own posts are in by default (also the ones it made before any member spoke, such
 * as relayed IRC lines in a fresh chat, whose jsonl entries name the IRC speaker), `transcript export` gives the same lines from the files and
 * from the service, and control characters never reach a file raw.
 */

let server: IrcServer;
let env: Env;
let alice: IrcWatcher;

const files = (chat: string, ext: string) => {
  const dir = join(env.dir, 'transcripts', 'demo', chat);
  try {
    return readdirSync(dir).filter((name) => name.endsWith(`.${ext}`)).sort().map((name) => join(dir, name));
  } catch {
    return [];
  }
};
const jsonl = (chat: string) => files(chat, 'jsonl').flatMap((file) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)));

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#fresh', '#random']);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }, { chat: 'fresh', create: true }],
    plugins: [
      // include_own is not set: the bot's own posts are in by default.
      { use: 'logger', with: { dir: './transcripts', format: ['jsonl', 'text', 'html', 'markdown'], full_history: true, flush_interval_ms: 50 } },
      relayPlugin(server, { channels: { fresh: '#fresh', random: '#random' } }),
      { use: 'responder', with: { builtins: true } },
    ],
  }]);
  await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#fresh/i);
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#random/i);
}, 60_000);

afterAll(async () => {
  alice?.close();
  await env?.close();
  await server?.close();
});

describe('complete transcripts', () => {
  test('lines the bot posted before any member spoke (three relayed IRC lines in a fresh chat) are in the transcript', async () => {
    for (const text of ['one from IRC', 'two from IRC', 'three from IRC']) alice.send(`PRIVMSG #fresh :${text}`);
    // Nobody in the chat speaks and the bot does not stop: the bot's own posts alone must reach the files.
    const written = await waitFor('the three lines in the transcript', () => {
      const lines = jsonl('fresh');
      return lines.length >= 3 ? lines : undefined;
    }, 30_000);
    expect(written.map((m) => m.msg_num)).toEqual([1, 2, 3]);
    expect(written.map((m) => m.message)).toEqual([expect.stringContaining('one from IRC'), expect.stringContaining('two from IRC'), expect.stringContaining('three from IRC')]);
    await waitFor('the text file too', () => files('fresh', 'txt').length === 1 && readFileSync(files('fresh', 'txt')[0]!, 'utf8').includes('three from IRC'));
  });

  test('a line relayed from IRC: jsonl names its speaker (relayed_from), text shows it as the chat does', async () => {
    // The chat's transcript has begun (its history read): from here on its lines come round the chain.
    await waitFor('random\'s transcript', () => jsonl('random').length > 0, 30_000);
    alice.send('PRIVMSG #random :hello from IRC');
    const line = await waitFor('the relayed line', () => jsonl('random').find((m) => String(m.message).includes('hello from IRC')), 30_000);
    // The chat message is the bot's own; relayed_from says who said it, where.
    expect(line.relayed_from).toEqual({ platform: 'irc', id: expect.stringMatching(/^alice!\S+@\S+$/), name: 'alice', gateway: expect.any(String) });
    expect(jsonl('random').filter((m) => m.relayed_from !== undefined)).toHaveLength(1);
    const text = await waitFor('the text file', () => files('random', 'txt').map((file) => readFileSync(file, 'utf8')).join('').match(/^.*hello from IRC$/m)?.[0]);
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\] <[^>]+> .*hello from IRC$/);
    expect(text).not.toContain('relayed_from');
  });

  test('the bot\'s answers are in by default, and export from the files and from the service agree', async () => {
    await post(env.svc, 'general', 'bob', '!ping');
    await post(env.svc, 'general', 'carol', 'and then some');
    await waitFor('the pong in the transcript', () => jsonl('general').some((m) => m.message === 'pong'), 30_000);
    await waitFor('carol in the transcript', () => jsonl('general').some((m) => m.message === 'and then some'));
    const today = dayOf(new Date(), 'UTC');
    const exported = async (format: string, source: string) => succeeded(await runCli([
      'transcript', 'export', '--chat', 'general', '--group', 'demo', '--from', today, '--to', today, '--format', format,
      '--dir', join(env.dir, 'transcripts'), '--source', source,
    ], envFor(env.svc, 'bob')));
    for (const format of ['text', 'jsonl', 'markdown']) {
      const [fromFiles, fromService] = await Promise.all([exported(format, 'files'), exported(format, 'service')]);
      expect(fromFiles.split('\n').length).toBeGreaterThanOrEqual(6);
      expect(fromFiles).toBe(fromService);
    }
    expect(await exported('text', 'files')).toMatch(/<Demo Bot> pong\n/);
  });

  test('control characters never reach a transcript raw; grep reads the files as text', async () => {
    await post(env.svc, 'general', 'carol', 'cr\rnul\u0000esc\u001b[31mbell\u0007 crlf\r\nend');
    await waitFor('the message in every format', () => ['txt', 'html', 'md'].every((ext) => files('general', ext).some((file) => readFileSync(file, 'utf8').includes('end'))));
    const text = readFileSync(files('general', 'txt')[0]!, 'utf8');
    expect(text).toContain('<Carol Member> cr\n    nul\\u{0}esc\\u{1b}[31mbell\\u{7} crlf\n    end\n');
    expect(readFileSync(files('general', 'html')[0]!, 'utf8')).toContain('cr<br>nul\\u{0}esc\\u{1b}[31mbell\\u{7} crlf<br>end');
    expect(readFileSync(files('general', 'md')[0]!, 'utf8')).toContain('cr<br>nul\\\\u{0}esc\\\\u{1b}\\[31mbell\\\\u{7} crlf<br>end');
    for (const ext of ['txt', 'html', 'md', 'jsonl']) {
      const bytes = readFileSync(files('general', ext)[0]!);
      // No C0 control but tab and line feed, and no DEL, in any file (jsonl: JSON escapes them).
      expect([...bytes].filter((byte) => (byte < 0x20 && byte !== 0x09 && byte !== 0x0a) || byte === 0x7f), ext).toEqual([]);
      // grep counts the lines instead of saying "binary file matches".
      expect(execFileSync('grep', ['-c', 'Carol', files('general', ext)[0]!], { encoding: 'utf8' }).trim(), ext).toMatch(/^\d+$/);
    }
    expect(jsonl('general').find((m) => typeof m.message === 'string' && m.message.endsWith('end'))!.message).toBe('cr\rnul\u0000esc\u001b[31mbell\u0007 crlf\r\nend');
  });
});
