import { once } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import type { FloodPlan } from './feeder.js';
import { adminClient } from './service-process.js';

/** The feeder's thread (see feeder.ts): its own event loop asks for the next chunk as soon as one is posted. */
const { plan, taken } = workerData as { plan: FloodPlan; taken: Int32Array };
const port = parentPort!;
const admin = adminClient(plan);
port.postMessage('ready');
await once(port, 'message');
for (let sent = 0; sent < plan.count; sent += plan.chunk) {
  while (sent - Atomics.load(taken, 0) > plan.window) await new Promise((resolve) => setTimeout(resolve, 5));
  await admin.admin('chats/messages', { ...plan.post, count: Math.min(plan.chunk, plan.count - sent) });
}
await admin.close();
port.postMessage('posted');
