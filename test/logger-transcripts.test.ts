import { appendFileSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import { dayOf, formatZoned } from '../plugins/logger/time.js';
import { adminOk, chatOf, history, kill, makeEnv, post, probes, readCursors, type Env, waitFor } from './helpers/supervisor.js';

/**
 * The logger against the local service: transcripts complete and without repeats across socket
 * drops, a stop and start, a replay of old messages and a SIGKILL; the bot's own replies included.
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

/** Every jsonl line of a chat's transcript files, in file (day) order. */
function jsonlLines(dir: string): ChatMessage[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();
  } catch {
    return [];
  }
  return files.flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as ChatMessage));
}

function readAll(dir: string, ext: string): string {
  return readdirSync(dir).filter((f) => f.endsWith(`.${ext}`)).sort().map((f) => readFileSync(join(dir, f), 'utf8')).join('');
}

/** The msg_nums a chat's history holds from `from` on (the bot's own ones too). */
async function expectedFrom(env: Env, subject: string, from: number): Promise<number[]> {
  const bot = env.client('bot');
  const chat = (await chatOf(bot, subject))!;
  return (await history(bot, chat.id)).map((m) => m.msg_num).filter((n) => n >= from);
}

async function complete(env: Env, dir: string, subject: string): Promise<{ nums: number[]; expected: number[] }> {
  const nums = jsonlLines(dir).map((m) => m.msg_num);
  const expected = await expectedFrom(env, subject, nums[0] ?? 1);
  return { nums, expected };
}

describe('logger: transcripts', () => {
  test('complete and without repeats across drops, a stop and start and a replay; own replies included', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    const recorder = env.probe('recorder');
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [
        { use: 'logger', with: { dir: './transcripts', format: ['jsonl', 'text', 'html', 'markdown'], include_own: true, flush_interval_ms: 50 } },
        { use: 'responder' },
        { use: recorder, with: { key: 'logged' } },
      ],
    }]);
    await env.start();
    const dir = join(env.dir, 'transcripts', 'demo', 'general');
    for (let i = 1; i <= 3; i += 1) {
      await post(env.svc, 'general', 'bob', `before drop ${i}`);
      await post(env.svc, 'general', 'carol', '!ping');
      await adminOk(env.svc, 'faults/drop-sockets', {});
    }
    await post(env.svc, 'general', 'alice', 'after the drops');
    await waitFor('the transcript to hold the last message', () => jsonlLines(dir).some((m) => m.message === 'after the drops'), 30_000);
    await env.supervisor!.stop();
    env.supervisor = undefined;

    // Said while the bot was away; then the cursor is moved back so old messages are handed on again.
    await post(env.svc, 'general', 'bob', 'while away {n}', 3);
    const { cursors } = readCursors(env.stateDir, 'bot0');
    const chatId = [...cursors.keys()][0]!;
    appendFileSync(join(env.stateDir, 'bots', 'bot0', 'cursors.jsonl'), `${JSON.stringify({ c: chatId, m: 2 })}\n`);
    await env.start();
    await post(env.svc, 'general', 'carol', '!ping');
    await post(env.svc, 'general', 'alice', 'final');
    await waitFor('the replayed messages to reach the plugins', () => probes().seen.logged!.some((s) => s.text === 'final'), 30_000);
    await env.supervisor!.stop();
    env.supervisor = undefined;

    const { nums, expected } = await complete(env, dir, 'general');
    expect(nums).toEqual(expected);
    const messages = jsonlLines(dir);
    expect(messages.filter((m) => m.message === 'pong')).toHaveLength(4);
    expect(messages.map((m) => m.message)).toContain('while away 3');
    // Every format holds every message once.
    const text = readAll(dir, 'txt');
    expect(text.match(/^\[\d\d:\d\d:\d\d\] <Demo Bot> pong$/gm)).toHaveLength(4);
    expect(text.match(/<Bob Member> while away 2$/gm)).toHaveLength(1);
    const html = readAll(dir, 'html');
    expect([...html.matchAll(/data-msg-num="(\d+)"/g)].map((m) => Number(m[1]))).toEqual(expected);
    const markdown = readAll(dir, 'md');
    expect([...markdown.matchAll(/^- <a id="m(\d+)"><\/a>/gm)].map((m) => Number(m[1]))).toEqual(expected);
    expect(env.log.lines.filter((l) => l.level >= 50)).toEqual([]);
  });

  test('a SIGKILL before anything was written loses nothing: the next start reads the rest from history', { timeout: 60_000 }, async () => {
    env = await makeEnv([]);
    const seenFile = join(env.dir, 'seen.jsonl');
    const recorder = env.probe('recorder');
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [
        // A long interval: what the first process takes stays in its memory.
        { use: 'logger', with: { dir: './transcripts', flush_interval_ms: 60_000 } },
        { use: recorder, with: { key: 'killed', file: seenFile } },
      ],
    }]);
    // A first run that writes something, so the chat has a file and a last msg_num.
    await env.start();
    await post(env.svc, 'general', 'bob', 'first');
    await waitFor('first through the chain', () => probes().seen.killed?.some((s) => s.text === 'first'));
    await env.supervisor!.stop();
    env.supervisor = undefined;
    const dir = join(env.dir, 'transcripts', 'demo', 'general');
    expect(jsonlLines(dir).map((m) => m.message)).toEqual(['first']);

    const child = await env.spawn();
    await post(env.svc, 'general', 'carol', 'in memory {n}', 5);
    await waitFor('the child to hand them on', () => readFileSync(seenFile, 'utf8').includes('in memory 5'));
    await kill(child);
    expect(jsonlLines(dir).map((m) => m.message)).toEqual(['first']);

    // The cursor is past them; only the logger's own reading of the files can bring them back.
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'logger', with: { dir: './transcripts', flush_interval_ms: 50 } }] }]);
    await env.start();
    await waitFor('the transcript to be completed', () => jsonlLines(dir).length === 6, 20_000);
    const { nums, expected } = await complete(env, dir, 'general');
    expect(nums).toEqual(expected);
    expect(jsonlLines(dir).map((m) => m.message)).toEqual(['first', ...[1, 2, 3, 4, 5].map((n) => `in memory ${n}`)]);
  });

  test('a path pattern of ids and dates, days and times in a zone, the whole history on a first start', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }, { chat: 'random' }],
      plugins: [{
        use: 'logger',
        with: {
          dir: './logs', format: ['jsonl', 'text', 'markdown'], path: '{group_id}/{chat_id}/{year}/{month}/{day}.{ext}',
          time_zone: 'Asia/Tokyo', time_format: 'YYYY-MM-DD HH:mm', full_history: true, flush_interval_ms: 50,
        },
      }],
    }]);
    await env.start();
    const bot = env.client('bot');
    for (const subject of ['general', 'random']) {
      const chat = (await chatOf(bot, subject))!;
      const all = await history(bot, chat.id);
      const root = join(env.dir, 'logs', chat.group_id, chat.id);
      const files = () => readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jsonl') && statSync(join(root, f)).isFile()).sort();
      await waitFor(`the history of ${subject}`, () => {
        try {
          return files().flatMap((f) => readFileSync(join(root, f), 'utf8').split('\n').filter(Boolean)).length === all.length;
        } catch {
          return false;
        }
      });
      // Every format written (the jsonl files may be done a moment before the others).
      await waitFor('nothing pending', () => (env!.supervisor!.stats().bot0!.plugins.logger as Record<string, number>).pending === 0);
      for (const file of files()) {
        const lines = readFileSync(join(root, file), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ChatMessage);
        // Each message sits in the file of its day in Tokyo.
        for (const m of lines) expect(file).toBe(`${dayOf(new Date(m.created), 'Asia/Tokyo').replaceAll('-', '/')}.jsonl`);
        const text = readFileSync(join(root, file.replace(/\.jsonl$/, '.txt')), 'utf8');
        expect(text).toBe(lines.map((m) => `[${formatZoned(new Date(m.created), 'Asia/Tokyo', 'YYYY-MM-DD HH:mm')}] <${m.display_name}> ${m.message}\n`).join(''));
        expect(readFileSync(join(root, file.replace(/\.jsonl$/, '.md')), 'utf8')).toMatch(/^# demo \/ (general|random) — \d{4}-\d\d-\d\d \(Asia\/Tokyo\)\n\n- <a id="m\d+"><\/a>/);
      }
      expect(files().flatMap((f) => readFileSync(join(root, f), 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as ChatMessage).msg_num)))
        .toEqual(all.map((m) => m.msg_num));
    }
    expect(env.supervisor!.stats().bot0!.plugins.logger).toMatchObject({ write_errors: 0, pending: 0, dropped: 0 });
  });
});
