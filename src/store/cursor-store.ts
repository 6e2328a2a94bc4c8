import { closeSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Journal lines before the file is rewritten with one line per chat. */
const COMPACT_AFTER = 10_000;

/**
 * The per-chat cursors (the last msg_num handed to the plugins), durable. Each move is appended to a
 * journal synchronously, right after the plugins are done with the message, so a crash at any later
 * moment neither repeats nor loses it. The journal is compacted at open and every so often.
 */
export class CursorStore {
  private readonly cursors = new Map<string, number>();
  private fd: number | undefined;
  private lines = 0;

  private constructor(private readonly path: string | undefined) {}

  static open(path: string): CursorStore {
    const store = new CursorStore(path);
    mkdirSync(dirname(path), { recursive: true });
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        const { c, m } = JSON.parse(line) as { c: string; m: number };
        if (typeof c === 'string' && typeof m === 'number') store.cursors.set(c, m);
      } catch {
        // A line cut short by a crash mid-write: the line before it for that chat stands.
      }
    }
    store.compact();
    return store;
  }

  /** Cursors in memory only (tests, dry runs). */
  static memory(): CursorStore {
    return new CursorStore(undefined);
  }

  get(chatId: string): number | undefined {
    return this.cursors.get(chatId);
  }

  set(chatId: string, msgNum: number): void {
    if (this.cursors.get(chatId) === msgNum) return;
    this.cursors.set(chatId, msgNum);
    if (this.fd === undefined) return;
    // One write(2) per message, nothing else: this runs once per message on the hot path.
    writeSync(this.fd, `{"c":${this.quoted(chatId)},"m":${msgNum}}\n`);
    if (++this.lines >= COMPACT_AFTER) this.compact();
  }

  private quotedIds = new Map<string, string>();

  /** A chat id as a JSON string, made once per chat. */
  private quoted(chatId: string): string {
    let quoted = this.quotedIds.get(chatId);
    if (quoted === undefined) {
      quoted = JSON.stringify(chatId);
      this.quotedIds.set(chatId, quoted);
    }
    return quoted;
  }

  /** Rewrites the journal as one line per chat (atomically) and reopens it for appending. */
  private compact(): void {
    if (!this.path) return;
    if (this.fd !== undefined) closeSync(this.fd);
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, [...this.cursors].map(([c, m]) => `${JSON.stringify({ c, m })}\n`).join(''));
    renameSync(temporary, this.path);
    this.fd = openSync(this.path, 'a');
    this.lines = this.cursors.size;
  }

  close(): void {
    if (this.fd === undefined) return;
    this.compact();
    closeSync(this.fd);
    this.fd = undefined;
  }
}
