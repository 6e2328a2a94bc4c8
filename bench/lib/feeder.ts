import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

/**
 * Posts a chat's flood from a worker thread, keeping at most `window` messages ahead of what the reader
 * under test has taken. The feeder must not share the reader's event loop: there, a reader busy with a
 * burst also held back the call for the next burst, so the service idled while the reader worked and
 * the reader idled while the service worked, and a rate came out as the sum of both per message rather
 * than the reader's own.
 */
export interface FloodPlan {
  baseUrl: string;
  ca: string;
  adminToken: string;
  /** The body of each POST /_admin/chats/messages, but for its count. */
  post: { chat: string; group: string; user: string; message: string };
  count: number;
  /** Messages per admin call. */
  chunk: number;
  /** The most posted and not yet taken (the service's socket buffer never nears its cut-off). */
  window: number;
}

export interface Flood {
  /** The reader sets taken[0] to how many messages it has taken, as it goes. */
  readonly taken: Int32Array;
  /** Posts every message; resolves when the last one is posted. */
  run(): Promise<void>;
}

/** Starts the feeder thread and waits until it is loaded, so that its start-up is not in a measurement. */
export async function startFlood(plan: FloodPlan): Promise<Flood> {
  const taken = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(new URL('./feeder-worker.mjs', import.meta.url), { workerData: { plan, taken } });
  // Set by the message itself: a thread that ends right after posting delivers the message and its
  // exit in one go, before any awaiting code runs.
  let finished = false;
  worker.on('message', (message) => {
    if (message === 'posted') finished = true;
  });
  const ended = new Promise<never>((_, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (!finished) reject(new Error(`the feeder thread ended (${code}) before it posted everything`));
    });
  });
  await Promise.race([once(worker, 'message'), ended]);
  return {
    taken,
    async run() {
      worker.postMessage('go');
      await Promise.race([once(worker, 'message'), ended]);
      await worker.terminate();
    },
  };
}
