import { writeSync } from 'node:fs';

/** Error codes that mean stderr is gone for good: a closed terminal (EIO), a reader that left (EPIPE). */
const GONE = new Set(['EIO', 'EPIPE', 'ENXIO', 'EBADF', 'ECONNRESET']);
const BUSY = new Set(['EAGAIN', 'EBUSY']);
const waiter = new Int32Array(new SharedArrayBuffer(4));

/**
 * Where the logs go: fd 2, written synchronously (a line is out before the next statement runs, as
 * with pino.destination(2)), and harmless once stderr is gone. SIGHUP is ignored (it is not a reload
 * yet), so a `groupwire run` whose terminal closed goes on; its writes then fail with EIO. pino's own
 * destination would emit an unhandled error (ending the process) and, at exit, retry its buffer
 * forever (never ending it). This one drops what cannot be written from then on: the bots go on, and
 * a SIGTERM still stops them.
 */
export class StderrSink {
  private gone = false;

  constructor(private readonly fd = 2) {}

  get closed(): boolean {
    return this.gone;
  }

  /** Always true: a line that cannot be written is dropped, and a logger never throws at its caller. */
  write(text: string): boolean {
    if (this.gone) return true;
    let rest = Buffer.from(text, 'utf8');
    let busyTries = 0;
    while (rest.length > 0) {
      try {
        rest = rest.subarray(writeSync(this.fd, rest));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? '';
        if (GONE.has(code)) {
          this.gone = true;
          return true;
        }
        // A full pipe (a slow reader): wait a moment, as pino's destination does; give the line up after
        // about 5 s. Any other failure (a full disk behind 2>file) loses this line, never the bots.
        if (!BUSY.has(code) || busyTries >= 500) return true;
        busyTries += 1;
        Atomics.wait(waiter, 0, 0, 10);
      }
    }
    return true;
  }
}

/** One line on stderr for a person (a CLI notice); nothing, and no error, when stderr is gone. */
export function sayOnStderr(line: string): void {
  new StderrSink().write(line.endsWith('\n') ? line : `${line}\n`);
}
