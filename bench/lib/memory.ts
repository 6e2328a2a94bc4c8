import { readFileSync } from 'node:fs';

/** A process's resident set size in bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number = process.pid): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}

/** Runs the garbage collector when node was started with --expose-gc, so RSS readings settle. */
export async function settle(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3; i += 1) {
    gc?.();
    await new Promise((r) => setTimeout(r, 100));
  }
}
