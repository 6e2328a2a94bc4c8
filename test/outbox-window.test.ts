import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, test, vi } from 'vitest';
import type { ChatMessage } from '../src/api/types.js';
import { OutboxFile, TEXT_WINDOW, type OutboxItem } from '../src/store/outbox-file.js';
import { ChatOutbox } from '../src/supervisor/chat-outbox.js';

/**
 * #32 part 3 "memory stays bounded whatever the backlog", for the bot's outbox in files: with 20,000
 * relayed posts of 1 KB queued for one chat, only TEXT_WINDOW of them keep their text in memory; the
 * others' texts are read back from disk (outbox.jsonl.texts) when asked for, and the journal still holds
 * every post whole (what a restart recovers from). Counted by the outbox (textsOnDisk), not measured.
 * The side file is unlinked as soon as made: the state dir shows only the journal.
 */
const POSTS = 20_000;
const textOf = (n: number) => `<carol> line ${n} ${'x'.repeat(1000)}`;
const post = (n: number, chatId = '17'): OutboxItem => ({
  id: `00000000-0000-4000-${chatId}00-${String(n).padStart(12, '0')}`, chatId, text: textOf(n), state: 'queued', queuedAt: 1_700_000_000_000,
  relay: { key: `irc:soak@bridge ${n}`, bus: true, first: true },
});

describe('the outbox in files with 20,000 posts of 1 KB waiting', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-window-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('keeps the texts of a window of posts in memory, the rest on disk, read back exact; sending, removing, reopening', () => {
    const path = join(dir, 'outbox.jsonl');
    const outbox = OutboxFile.open(path);
    for (let n = 0; n < POSTS; n += 1) outbox.add(post(n));
    outbox.add(post(0, '18'));
    expect(outbox.textsOnDisk).toBe(POSTS - TEXT_WINDOW);
    // Every text reads back as it was queued, by whatever finds the post.
    for (const n of [0, TEXT_WINDOW - 1, TEXT_WINDOW, 12_345, POSTS - 1]) {
      expect(outbox.byRelay('17', `irc:soak@bridge ${n}`, undefined)?.text).toBe(textOf(n));
    }
    // The journal holds every post whole.
    expect(OutboxFile.read(path).items.map((item) => item.text)).toEqual([...Array.from({ length: POSTS }, (_, n) => textOf(n)), textOf(0)]);

    // Sent in order: a post sent has its text in memory for good; its line in the journal is whole.
    for (let n = 0; n < 1500; n += 1) {
      const next = outbox.firstQueued('17')!;
      outbox.markSent(next);
      outbox.changed(next);
      expect(next.text).toBe(textOf(n));
      next.state = 'done';
      outbox.update([next], [next.id]);
    }
    expect(outbox.textsOnDisk).toBe(POSTS - TEXT_WINDOW - 500);
    // Posts whose text is on disk removed (a chat reset fails them all), then more queued: the side file is rewritten smaller.
    const sizeBefore = outbox.textsFileBytes;
    outbox.update([], Array.from({ length: 15_000 }, (_, n) => post(POSTS - 1 - n).id));
    for (let n = POSTS; n < POSTS + 1000; n += 1) outbox.add(post(n));
    expect(outbox.textsFileBytes).toBeLessThan(sizeBefore / 2);
    const waiting = [...Array.from({ length: POSTS - 15_000 - 1500 }, (_, k) => 1500 + k), ...Array.from({ length: 1000 }, (_, k) => POSTS + k)];
    expect(outbox.forChat('17').map((item) => item.text)).toEqual(waiting.map(textOf));
    // (Texts read back to be sent stay on disk till then: at most the window is held, here none of chat 17's.)
    expect(outbox.textsOnDisk).toBe(waiting.length);

    // Reopened: the same posts, the same texts, a window of them in memory.
    const reopened = OutboxFile.open(path);
    expect(reopened.textsOnDisk).toBe(waiting.length - TEXT_WINDOW);
    expect(reopened.forChat('17').map((item) => item.text)).toEqual(waiting.map(textOf));
    expect(reopened.forChat('18').map((item) => item.text)).toEqual([textOf(0)]);
    // The first outbox's texts are its own (another open of the same journal does not disturb them).
    expect(outbox.forChat('17').map((item) => item.text)).toEqual(waiting.map(textOf));
    expect(readdirSync(dir)).toEqual(['outbox.jsonl']);
  });

  test('a chat drains a backlog whose texts wait on disk: each post sent once, in order, with its text, and confirmed', async () => {
    vi.useFakeTimers();
    try {
      const file = OutboxFile.open(join(dir, 'drain', 'outbox.jsonl'));
      const posted: string[] = [];
      const outbox = new ChatOutbox({
        file, chatId: 'chat-1', log: pino({ level: 'silent' }), rate: { perSecond: 1000, burst: 20 },
        post: (text) => {
          posted.push(text);
          return true;
        },
        cursor: () => 10,
        handled: () => true,
        lookUp: async () => undefined,
      });
      outbox.caughtUp();
      const lines = TEXT_WINDOW + 300;
      const answers = Array.from({ length: lines }, (_, n) => outbox.enqueue(textOf(n), undefined, { key: `line-${n}`, bus: true, first: true }));
      expect(file.textsOnDisk).toBe(lines - TEXT_WINDOW);
      let msgNum = 100;
      let confirmed = 0;
      for (let round = 0; round < 1000 && confirmed < lines; round += 1) {
        await vi.advanceTimersByTimeAsync(50);
        for (; confirmed < posted.length; confirmed += 1) {
          msgNum += 1;
          outbox.confirm({ object: 'chat_message', msg_num: msgNum, message: posted[confirmed]!, user_id: 'bot', created: new Date().toISOString() } as ChatMessage);
        }
      }
      expect((await Promise.all(answers)).map((message) => message.message)).toEqual(Array.from({ length: lines }, (_, n) => textOf(n)));
      expect(posted).toEqual(Array.from({ length: lines }, (_, n) => textOf(n)));
      expect(file.textsOnDisk).toBe(0);
      outbox.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
