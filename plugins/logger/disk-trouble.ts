import type { Logger } from 'pino';

/**
 * Trouble with the transcript directory (a full disk, a path that cannot be made, no permission),
 * from writing or from reading where files end: counted, and logged clearly — the first failure as an
 * error, then at most every 30 s while it lasts, and once when it is over.
 */
export class DiskTrouble {
  errors = 0;
  private failingSince: number | undefined;
  private lastLog = 0;

  constructor(
    private readonly log: Logger,
    private readonly pending: () => number,
  ) {}

  get failing(): boolean {
    return this.failingSince !== undefined;
  }

  failed(error: unknown, file: string, doing: 'write' | 'read'): void {
    this.errors += 1;
    const now = Date.now();
    const err = error as NodeJS.ErrnoException;
    const detail = { file, code: err.code, err, pending: this.pending(), errors: this.errors };
    if (this.failingSince === undefined) {
      this.failingSince = now;
      this.lastLog = now;
      this.log.error(detail, `cannot ${doing} transcripts (${explain(err)}); messages wait in memory and are written once it works again`);
    } else if (now - this.lastLog >= 30_000) {
      this.lastLog = now;
      this.log.error({ ...detail, failingForMs: now - this.failingSince }, `still cannot ${doing} transcripts (${explain(err)})`);
    }
  }

  /** It worked: answers true when that ends a time of failures. */
  worked(): boolean {
    if (this.failingSince === undefined) return false;
    this.log.info({ failedForMs: Date.now() - this.failingSince, errors: this.errors }, 'transcripts are writable again; what waited is being written');
    this.failingSince = undefined;
    return true;
  }
}

/** A file system error in words a person at the terminal understands. */
export function explain(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ENOSPC': return 'the disk is full';
    case 'EDQUOT': return 'the disk quota is used up';
    case 'EACCES':
    case 'EPERM': return 'permission denied';
    case 'EROFS': return 'the file system is read-only';
    case 'ENOTDIR': return 'a part of the transcript path is a file, not a directory';
    case 'EISDIR': return 'a transcript file\'s path is a directory';
    case 'EMFILE':
    case 'ENFILE': return 'too many open files';
    case 'EIO': return 'an input/output error';
    default: return error.code ?? error.message;
  }
}
