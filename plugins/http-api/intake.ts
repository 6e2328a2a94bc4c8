import { join } from 'node:path';
import type { Logger } from 'pino';
import { attributedLines, Backoff, DurableQueue, failureFields, oneLineName, PostFailedError, sleep, type GatewayPort, type IncomingMessage, type KeyValueStore, type Storage } from '../../src/index.js';
import { fileNameOf } from './files.js';
import type { PostedFile, UploadDir } from './uploads.js';

/** A message POSTed to a channel, waiting for the gateway. */
export interface IntakeItem {
  /** Its native id in the channel (the 202's `id`): what replies name, and what the gateway dedupes by. */
  id: string;
  channel: string;
  client: string;
  kind: 'message' | 'action';
  text: string;
  name: string;
  reply_to?: string;
  time: string;
  /** The POST's Idempotency-Key, so its answer can be remembered again after a crash right after the push. */
  idempotency_key?: string;
  /** A multipart POST's files, in the uploads folder until the gateway took the line. */
  files?: PostedFile[];
}

export interface IntakeCounters {
  received: number;
  receive_retries: number;
}

const LAST_ID_MS = 'last_id_ms';

/**
 * Native ids: the time in ms (13 digits) and a counter within it, so they sort as they were given. The
 * last time used is kept in the store, so ids after a restart (even with a clock set back) sort after
 * those before it.
 */
export class NativeIds {
  private ms: number;
  /** As if the last ms were used up: a first id in the same ms as the last one kept moves on to the next. */
  private count = 999_999;

  constructor(private readonly store: KeyValueStore) {
    this.ms = store.get<number>(LAST_ID_MS) ?? 0;
  }

  next(now = Date.now()): string {
    if (now > this.ms) {
      this.ms = now;
      this.count = 0;
      this.store.set(LAST_ID_MS, now);
    } else if (++this.count > 999_999) {
      this.ms += 1;
      this.count = 0;
      this.store.set(LAST_ID_MS, this.ms);
    }
    return `${String(this.ms).padStart(13, '0')}-${String(this.count).padStart(6, '0')}`;
  }
}

/**
 * POSTed messages to the gateways: a durable queue per channel (so a chat that will not take one
 * channel's lines holds up no other), each emptied in order by its own worker. An item leaves its queue
 * only once `gateway.receive` resolved; a chat that will not take it now (PostFailedError) is tried again
 * with a growing pause. The gateway drops a line it already took (same channel and id), so an item handed
 * over again after a crash is posted once.
 */
export class Intake {
  private readonly queues = new Map<string, { queue: DurableQueue<IntakeItem>; wake: () => void; running: Promise<void> }>();
  private readonly stopper = new AbortController();

  constructor(
    private readonly options: {
      dataDir: string;
      storage: Storage;
      max: number;
      gateway: GatewayPort;
      log: Logger;
      counters: IntakeCounters;
      incoming: string;
      retryMs: number;
      uploads: UploadDir;
    },
  ) {}

  /** The channel's queue, opened (and its worker started) on first use. */
  queue(channel: string): DurableQueue<IntakeItem> {
    const known = this.queues.get(channel);
    if (known) return known.queue;
    const { options } = this;
    const queue = DurableQueue.open<IntakeItem>(join(options.dataDir, `intake-${fileNameOf(channel)}.json`), {
      storage: options.storage,
      maxItems: options.max,
      onHighWater: (size, max) => options.log.warn({ channel, size, max }, 'the queue of posted messages is filling up: the chat is not taking them'),
    });
    const entry = { queue, wake: () => {}, running: Promise.resolve() };
    this.queues.set(channel, entry);
    entry.running = this.work(channel, entry);
    return queue;
  }

  /** Queues an item (written before this returns); throws QueueFullError when the channel's queue is full. */
  push(item: IntakeItem): void {
    this.queue(item.channel).push(item);
    this.queues.get(item.channel)!.wake();
  }

  sizes(): Record<string, number> {
    return Object.fromEntries([...this.queues].map(([channel, { queue }]) => [`from_${channel}`, queue.size]));
  }

  get size(): number {
    return [...this.queues.values()].reduce((sum, { queue }) => sum + queue.size, 0);
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    for (const entry of this.queues.values()) entry.wake();
    await Promise.all([...this.queues.values()].map((entry) => entry.running));
  }

  private async work(channel: string, entry: { queue: DurableQueue<IntakeItem>; wake: () => void }): Promise<void> {
    const signal = this.stopper.signal;
    const backoff = new Backoff(this.options.retryMs, 30_000);
    while (!signal.aborted) {
      const item = entry.queue.peek();
      if (!item) {
        await new Promise<void>((done) => {
          entry.wake = done;
        });
        continue;
      }
      try {
        await this.options.gateway.receive(channel, this.incomingOf(item));
        entry.queue.shift();
        // The gateway read the files into its media store: the temp files have done their part.
        if (item.files) this.removeFiles(item);
        backoff.reset();
        this.options.counters.received += 1;
      } catch (error) {
        if (signal.aborted) return;
        this.options.counters.receive_retries += 1;
        const expected = error instanceof PostFailedError;
        this.options.log[expected ? 'warn' : 'error']({ channel, id: item.id, ...failureFields(error) }, 'the chat did not take a posted message; trying again');
        await sleep(Math.max(this.options.retryMs, backoff.next()), signal);
      }
    }
  }

  /** Every upload a queued line names (the others are left from a crash: start() sweeps them). */
  uploadsQueued(): Set<string> {
    const names = new Set<string>();
    for (const { queue } of this.queues.values()) for (const item of queue.values()) for (const file of item.files ?? []) names.add(file.file);
    return names;
  }

  private removeFiles(item: IntakeItem): void {
    this.options.uploads.remove(item.files!.map((file) => file.file)).catch((error: unknown) => {
      this.options.log.warn({ channel: item.channel, id: item.id, ...failureFields(error) }, 'the temp files of a posted message could not be removed; the next start removes them');
    });
  }

  private incomingOf(item: IntakeItem): IncomingMessage {
    // An action keeps the gateway's own rendering (`* name text`); the template is for messages.
    // Each line of the text carries the speaker (docs/gateways.md "Several lines"): a second line cannot pass for someone else's.
    const name = oneLineName(item.name);
    const chatText = item.kind === 'message' && (item.text.trim() !== '' || !item.files?.length)
      ? attributedLines(item.text, (line) => this.options.incoming.replace('{name}', () => name).replace('{text}', () => line))
      : undefined;
    return {
      kind: item.kind, text: item.text, nativeId: item.id, time: item.time,
      speaker: { platform: 'http', id: item.client, name: item.name },
      ...(item.reply_to !== undefined ? { replyTo: item.reply_to } : {}),
      ...(chatText !== undefined ? { chatText } : {}),
      ...(item.files?.length ? { files: item.files.map((file) => this.options.uploads.incoming(file)) } : {}),
    };
  }
}
