import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import { chatOf, history, makeEnv, post, type Env, waitFor } from './helpers/supervisor.js';

/**
 * A transcript directory that cannot be written (its path runs through a regular file: ENOTDIR, which
 * holds for root too, unlike permissions) is an error in the log and in stats(), not a crash: the
 * chain goes on, messages wait (beyond max_pending they are read from history later) and everything
 * is written, once and in order, when the directory works again.
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

function jsonl(dir: string): ChatMessage[] {
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();
  } catch {
    return [];
  }
  return files.flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ChatMessage));
}

const loggerStats = (e: Env) => e.supervisor!.stats().bot0!.plugins.logger as Record<string, number>;

describe('logger: disk errors', () => {
  for (const [name, where, maxPending] of [
    ['before the first file (reading where files end fails)', 'first-start', 1_000],
    ['after files were written, with memory full (read from history afterwards)', 'later', 10],
  ] as const) {
    test(`an unwritable directory ${name}`, { timeout: 40_000 }, async () => {
      env = await makeEnv([]);
      const blocker = join(env.dir, 'blocker');
      env.writeConfig([{
        chats: [{ chat: 'general' }],
        plugins: [
          { use: 'logger', with: { dir: './blocker/transcripts', format: ['jsonl', 'text'], include_own: false, flush_interval_ms: 50, retry_max_ms: 200, max_pending: maxPending } },
          { use: 'responder' },
        ],
      }]);
      const dir = join(blocker, 'transcripts', 'demo', 'general');
      if (where === 'first-start') writeFileSync(blocker, 'not a directory');
      await env.start();
      const current = env;
      if (where === 'later') {
        await post(env.svc, 'general', 'bob', 'written before the trouble');
        await waitFor('the first message on disk', () => jsonl(dir).length === 1);
        await waitFor('every format written', () => loggerStats(current).pending === 0);
        rmSync(blocker, { recursive: true });
        writeFileSync(blocker, 'not a directory');
      }

      await post(env.svc, 'general', 'carol', 'while it fails {n}', 25);
      await waitFor('a write error counted', () => loggerStats(current).write_errors! > 0);
      // The chain is not held up: the responder still answers.
      const bot = env.client('bot');
      const general = (await chatOf(bot, 'general'))!;
      await post(env.svc, 'general', 'bob', '!ping');
      await waitFor('the pong', async () => (await history(bot, general.id)).some((m) => m.message === 'pong'));
      const errors = env.log.lines.filter((l) => l.level === 50 && String(l.msg).startsWith('cannot '));
      expect(errors).toHaveLength(1);
      expect(errors[0]!.msg).toMatch(/^cannot (write|read) transcripts \(a part of the transcript path is a file, not a directory\); messages wait in memory/);
      expect(errors[0]!.code).toBe('ENOTDIR');
      if (maxPending === 10) {
        await waitFor('messages dropped from memory', () => loggerStats(current).dropped! > 0);
        expect(env.log.lines.some((l) => l.level === 50 && /transcript memory is full/.test(String(l.msg)))).toBe(true);
        expect(loggerStats(current).pending).toBeLessThanOrEqual(10);
      } else expect(loggerStats(current).pending).toBeGreaterThan(0);

      // Fixed: the file becomes a directory.
      rmSync(blocker);
      mkdirSync(blocker);
      // Everything but the bot's own (include_own is off).
      const botId = general.chat_sub!.user_id;
      const others = (await history(bot, general.id)).filter((m) => m.user_id !== botId).map((m) => m.msg_num);
      await waitFor('everything written', () => jsonl(dir).at(-1)?.msg_num === others.at(-1), 20_000);
      await waitFor('nothing pending', () => loggerStats(current).pending === 0);
      const nums = jsonl(dir).map((m) => m.msg_num);
      expect(nums).toEqual(others.filter((n) => n >= nums[0]!));
      // 25 and the !ping (the first message's file went with the directory in the second case).
      expect(nums).toHaveLength(26);
      const text = readdirSync(dir).filter((f) => f.endsWith('.txt')).map((f) => readFileSync(join(dir, f), 'utf8')).join('');
      for (let i = 1; i <= 25; i += 1) expect(text.match(new RegExp(`<Carol Member> while it fails ${i}$`, 'gm'))).toHaveLength(1);
      expect(env.log.withMessage('transcripts are writable again; what waited is being written')).toHaveLength(1);
    });
  }
});
