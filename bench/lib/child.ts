import type { ChildProcess } from 'node:child_process';

/** A process a bench started and stops again (groupwire's supervisor, a baseline client). */
export interface Running {
  stop(): Promise<void>;
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => child.once('exit', () => done()));
}

/** SIGTERM (groupwire flushes and closes cleanly), SIGKILL after 10 s if it has not exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  const exited = waitForExit(child);
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
