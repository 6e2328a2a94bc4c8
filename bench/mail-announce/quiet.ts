import { setTimeout as sleep } from 'node:timers/promises';
import type { Running } from '../lib/child.js';
import type { ServiceProcess } from '../lib/service-process.js';

/** What the service counted in one window: getmessages calls and all API calls, and the window's length. */
export interface CallCount {
  getmessages: number;
  all: number;
  seconds: number;
}

/** The service's per-operation counts (`/_admin/stats` api_calls): every caller's REST calls, as the service took them. */
async function apiCalls(service: ServiceProcess): Promise<Record<string, number>> {
  return ((await service.stats()) as { api_calls: Record<string, number> }).api_calls;
}

/**
 * The service's count of API calls over `seconds`, while only `running` calls it (the bench's own
 * watcher makes no REST calls once its sockets are open; the admin routes are not counted).
 */
export async function countCalls(service: ServiceProcess, seconds: number): Promise<CallCount> {
  const before = await apiCalls(service);
  const from = performance.now();
  await sleep(seconds * 1000);
  const after = await apiCalls(service);
  const elapsed = (performance.now() - from) / 1000;
  const sum = (counts: Record<string, number>) => Object.values(counts).reduce((total, count) => total + count, 0);
  return { getmessages: (after.getmessages ?? 0) - (before.getmessages ?? 0), all: sum(after) - sum(before), seconds: elapsed };
}

export const perHour = (count: number, seconds: number): number => (count * 3600) / seconds;

/** Starts something, counts the service's calls over a window once it settled, stops it. */
export async function quietWindow(
  service: ServiceProcess, start: () => Promise<Running>, settle: (running: Running) => Promise<void>, seconds: number,
): Promise<CallCount> {
  const running = await start();
  try {
    await settle(running);
    return await countCalls(service, seconds);
  } finally {
    await running.stop();
  }
}
