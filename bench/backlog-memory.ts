import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DurableQueue } from '../src/store/durable-queue.js';
import { OutboxFile, type OutboxItem } from '../src/store/outbox-file.js';

/**
 * Memory a waiting line costs (#32 part 3, "memory bounded whatever the backlog"): heap (and external)
 * bytes per item of a relay's DurableQueue and of the bot's outbox, after a full collection, for lines
 * of 100 bytes and of 10 KB. Run with `node --expose-gc --import tsx bench/backlog-memory.ts`
 * (BACKLOG_MEMORY_ITEMS, default 20,000). Prints one line per case; not part of `npm run bench`.
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

const dir = mkdtempSync(join(tmpdir(), 'backlog-memory-'));
try {
  for (const size of [100, 10_000]) {
    const before = used();
    const queue = DurableQueue.open<{ src: string; key: string; text: string }>(join(dir, `queue-${size}.json`), { maxItems: ITEMS + 1, keyOf: (line) => line.key });
    for (let n = 0; n < ITEMS; n += 1) queue.push({ src: `17:${n}`, key: `k${n}`, text: text(size, n) });
    const queueBytes = (used() - before) / ITEMS;

    const beforeOutbox = used();
    const outbox = OutboxFile.open(join(dir, `outbox-${size}.jsonl`));
    for (let n = 0; n < ITEMS; n += 1) {
      const item: OutboxItem = { id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, chatId: '17', text: text(size, n), state: 'queued', queuedAt: Date.now(),
        relay: { key: `irc:soak@bridge ${n}`, bus: true, first: true } };
      outbox.add(item);
    }
    const outboxBytes = (used() - beforeOutbox) / ITEMS;
    process.stdout.write(`${size} B lines, ${ITEMS} waiting: DurableQueue ${queueBytes.toFixed(0)} B/item (${(queueBytes / size).toFixed(2)}x the text), outbox ${outboxBytes.toFixed(0)} B/item (${(outboxBytes / size).toFixed(2)}x); 50,000 waiting: ${(queueBytes * 50_000 / 1048576).toFixed(1)} MB and ${(outboxBytes * 50_000 / 1048576).toFixed(1)} MB\n`);
    // Kept alive until measured.
    if (queue.size + outbox.size < 0) process.stdout.write('');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
