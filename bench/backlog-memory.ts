import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_WINDOW, DurableQueue } from '../src/store/durable-queue.js';
import { OutboxFile, type OutboxItem } from '../src/store/outbox-file.js';

/**
 * Memory a backlog costs (#32 part 3, "memory bounded whatever the backlog"): heap (and external)
 * bytes held by a relay's DurableQueue (its window of items from the head, and with keyOf a count per
 * waiting key) and per item of the bot's outbox, after a full collection, for lines of 100 bytes and
 * of 10 KB. Run with `node --expose-gc --import tsx bench/backlog-memory.ts` (BACKLOG_MEMORY_ITEMS,
 * default 20,000). Prints one line per case; not part of `npm run bench`.
 */
const ITEMS = Number(process.env.BACKLOG_MEMORY_ITEMS ?? 20_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

function used(): number {
  gc!();
  gc!();
  const memory = process.memoryUsage();
  return memory.heapUsed + memory.external + memory.arrayBuffers;
}

function text(size: number, n: number): string {
  const head = `<carol> line ${n} `;
  return head + 'x'.repeat(Math.max(0, size - head.length));
}

type Line = { src: string; key: string; text: string };

/** Bytes held by a queue of ITEMS waiting lines (it is kept alive until measured). */
function queueBytes(path: string, size: number, keyed: boolean): number {
  const before = used();
  const queue = DurableQueue.open<Line>(path, { maxItems: ITEMS + 1, ...(keyed ? { keyOf: (line: Line) => line.key } : {}) });
  for (let n = 0; n < ITEMS; n += 1) queue.push({ src: `17:${n}`, key: `k${n}`, text: text(size, n) });
  const held = used() - before;
  if (queue.size !== ITEMS) throw new Error(`queue holds ${queue.size}`);
  return held;
}

function outboxBytes(path: string, size: number): number {
  const before = used();
  const outbox = OutboxFile.open(path);
  for (let n = 0; n < ITEMS; n += 1) {
    const item: OutboxItem = { id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, chatId: '17', text: text(size, n), state: 'queued', queuedAt: Date.now(),
      relay: { key: `irc:soak@bridge ${n}`, bus: true, first: true } };
    outbox.add(item);
  }
  const held = used() - before;
  if (outbox.size !== ITEMS) throw new Error(`outbox holds ${outbox.size}`);
  return held;
}

const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;
const dir = mkdtempSync(join(tmpdir(), 'backlog-memory-'));
try {
  for (const size of [100, 10_000]) {
    // The queue holds its window (DEFAULT_WINDOW items from the head) and, with keyOf, a count per key of every waiting line.
    const plain = queueBytes(join(dir, `plain-${size}.json`), size, false);
    const keyed = queueBytes(join(dir, `keyed-${size}.json`), size, true);
    const perKey = Math.max(0, keyed - plain) / ITEMS;
    const outbox = outboxBytes(join(dir, `outbox-${size}.jsonl`), size) / ITEMS;
    process.stdout.write(`${size} B lines, ${ITEMS} waiting: DurableQueue ${mb(plain)} held (window ${DEFAULT_WINDOW}), with keyOf ${mb(keyed)} (${perKey.toFixed(0)} B per waiting key); `
      + `outbox ${outbox.toFixed(0)} B/item (${(outbox / size).toFixed(2)}x); 50,000 waiting: queue ${mb(plain + perKey * 50_000)}, outbox ${mb(outbox * 50_000)}\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
