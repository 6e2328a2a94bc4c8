import { closeSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { mkdirPrivateSync, openPrivateSync, writeFilePrivateSync } from './private-files.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

/**
 * Journal lines before the file is rewritten with one line per chat: at least this many, and at least
 * twice the lines the last rewrite left (with more chats than this, a rewrite leaves more lines than
 * CURSOR_COMPACT_AFTER, and compacting at every move made 10,000 first cursors cost 146 s).
 */
export const CURSOR_COMPACT_AFTER = 10_000;

/**
 * The per-chat cursors (the last msg_num handed to the plugins), durable. Each move is appended to a
 * journal synchronously, right after the plugins are done with the message, so a crash at any later
 * moment neither repeats nor loses it. The journal is compacted at open and every so often.
 *
 * Beside a chat's cursor the store keeps the chat's `created` time as the service gave it when the
 * cursor was first written (`"k"` in the journal): a chat id that later names a chat created at another
 * time was deleted and made again, and the cursor belongs to the old one. A line is `{"c":id,"m":n}`
 * (a move), `{"c":id,"m":n,"k":created}` (a first write or a reset), `{"c":id,"k":created}` or
 * `{"c":id,"e":"<group>/<chat>"}` (the bots.yaml entry that named the chat; a by-subject entry that
 * names another id later means the old chat was deleted and one of its subject made); files
 * written before there was a `"k"` read as they are, and the time is added at the next start.
 */
export class CursorStore {
  private readonly cursors = new Map<string, number>();
  private readonly created = new Map<string, string>();
  /** bots.yaml's chat entries (`<group>/<chat>`) and the chat id each named last (`"e"` on the chat's line). */
  private readonly entries = new Map<string, string>();
  private fd: number | undefined;
  /** Not on files (Redis, for workers): the storage's journal, written a batch per turn. */
  private journal: Journal | undefined;
  private lines = 0;
  /** The lines the last rewrite left (one per chat): compaction waits for the journal to double them. */
  private compacted = 0;

  private constructor(private readonly path: string | undefined) {}

  static open(path: string, storage: Storage = FILE_STORAGE): CursorStore {
    const store = new CursorStore(path);
    if (storage.kind !== 'files') {
      store.read(storage.readText(path));
      const lines = store.compactLines();
      store.journal = storage.journal(path, lines);
      store.compacted = lines.length;
      return store;
    }
    mkdirPrivateSync(dirname(path));
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    store.read(text);
    store.compact();
    return store;
  }

  private read(text: string): void {
    const store = this;
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        const { c, m, k, e } = JSON.parse(line) as { c: string; m?: number; k?: string; e?: string };
        if (typeof c !== 'string') continue;
        if (typeof e === 'string') store.entries.set(e, c);
        if (typeof m === 'number') store.cursors.set(c, m);
        if (typeof k === 'string') store.created.set(c, k);
      } catch {
        // A line cut short by a crash mid-write: the line before it for that chat stands.
      }
    }
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
    if (this.journal) {
      this.journal.append({ c: chatId, m: msgNum });
      this.compactJournalIfDue();
      return;
    }
    if (this.fd === undefined) return;
    // One write(2) per message, nothing else: this runs once per message on the hot path.
    writeSync(this.fd, `{"c":${this.quoted(chatId)},"m":${msgNum}}\n`);
    if (++this.lines >= this.compactAt()) this.compact();
  }

  /** The chat's `created` as it was when its cursor was first written (undefined: not known). */
  createdOf(chatId: string): string | undefined {
    return this.created.get(chatId);
  }

  /** Remembers the chat's `created` (the first time, or after a reset: the new chat's). */
  noteCreated(chatId: string, created: string): void {
    if (this.created.get(chatId) === created) return;
    this.created.set(chatId, created);
    this.append({ c: chatId, k: created });
  }

  /**
   * The chat's history was reset (went backwards, or the id names a new chat): the cursor starts again
   * at `msgNum`, and `created` (when known) is the new chat's.
   */
  reset(chatId: string, msgNum: number, created: string | undefined): void {
    this.cursors.set(chatId, msgNum);
    if (created !== undefined) this.created.set(chatId, created);
    this.append({ c: chatId, m: msgNum, ...(created === undefined ? {} : { k: created }) });
  }

  /** The chat id a bots.yaml entry named last time (undefined: never seen). */
  chatOfEntry(entry: string): string | undefined {
    return this.entries.get(entry);
  }

  noteEntry(entry: string, chatId: string): void {
    if (this.entries.get(entry) === chatId) return;
    this.entries.set(entry, chatId);
    this.append({ c: chatId, e: entry });
  }

  /** Forgets a chat (its config entry names another chat now). */
  forget(chatId: string): void {
    if (!this.cursors.has(chatId) && !this.created.has(chatId)) return;
    this.cursors.delete(chatId);
    this.created.delete(chatId);
    for (const [entry, id] of this.entries) if (id === chatId) this.entries.delete(entry);
    // Rewritten at once: a journal line cannot say "gone".
    if (this.journal) this.rewriteJournal();
    if (this.fd !== undefined) this.compact();
  }

  private append(entry: { c: string; m?: number; k?: string; e?: string }): void {
    if (this.journal) {
      this.journal.append(entry);
      this.compactJournalIfDue();
      return;
    }
    if (this.fd === undefined) return;
    writeSync(this.fd, `${JSON.stringify(entry)}\n`);
    if (++this.lines >= this.compactAt()) this.compact();
  }

  private compactAt(): number {
    return Math.max(CURSOR_COMPACT_AFTER, 2 * this.compacted);
  }

  private compactJournalIfDue(): void {
    if (this.journal!.lines >= this.compactAt()) this.rewriteJournal();
  }

  private rewriteJournal(): void {
    const lines = this.compactLines();
    this.journal!.rewrite(lines);
    this.compacted = lines.length;
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
    const lines = this.compactLines();
    writeFilePrivateSync(temporary, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    renameSync(temporary, this.path);
    this.fd = openPrivateSync(this.path, 'a');
    this.lines = this.compacted = lines.length;
  }

  /** The journal as one line per chat. */
  private compactLines(): Array<{ c: string; m?: number; k?: string; e?: string }> {
    const entriesOf = new Map<string, string[]>();
    for (const [e, c] of this.entries) entriesOf.set(c, [...(entriesOf.get(c) ?? []), e]);
    const chats = new Set([...this.cursors.keys(), ...this.created.keys(), ...entriesOf.keys()]);
    // One line per chat: its cursor, its chat's created time, the bots.yaml entry that names it (a
    // second entry naming the same chat, by id and by subject, gets a line of its own).
    return [...chats].flatMap((c) => {
      const [first, ...more] = entriesOf.get(c) ?? [];
      return [{ c, m: this.cursors.get(c), k: this.created.get(c), e: first }, ...more.map((e) => ({ c, e }))];
    });
  }

  close(): void {
    if (this.fd === undefined) return;
    this.compact();
    closeSync(this.fd);
    this.fd = undefined;
  }
}
