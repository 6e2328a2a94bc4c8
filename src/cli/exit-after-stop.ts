import type { Logger } from 'pino';

/** How long a stopped `groupwire run` lets something it does not own hold the process before exiting. */
export const EXIT_GRACE_MS = 2_000;

/**
 * After a clean stop everything groupwire opened is closed (sockets, files, timers), and node exits
 * once nothing else holds its event loop. A platform library may still hold it for a while with a
 * timer or socket of its own (in the platforms bench a bot with relay-matrix was still there 10 s after
 * its stop), and a user's plugin may leave one for good: a stop must take seconds whatever a library
 * does (#32 item 3). So `EXIT_GRACE_MS` after the stop, if the process is still here, it says
 * what still held it (an info line) and exits with `code`. The timer is unref'd: a process that nothing holds exits at once, as before.
 */
export function exitIfStillHeld(log: Logger, code: number, graceMs = EXIT_GRACE_MS): void {
  const timer = setTimeout(() => {
    const held = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    log.info({ held }, 'stopped; exiting though something still held the process (a library\'s own timer or socket)');
    process.exit(code);
  }, graceMs);
  timer.unref();
}
