import { JsonLinesFile } from './json-lines-file.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

/** Journal lines, at the least, before the file is rewritten with one line per chat. */
export const MARKS_COMPACT_AFTER = 1000;

/**
 * The highest msg_num a relay has taken per chat, in a file written synchronously. After a crash the
 * supervisor may hand on again the message a plugin was busy with; a relay that marked it (when it
 * queued it, and again when it delivered it) knows not to send it twice. Each mark is one appended
 * line `[chat id, msg_num]` (see JsonLinesFile); the file is rewritten at open and every so often.
 */
export class MsgNumMarks {
  /** The lines the last rewrite left. */
  private compacted: number;

  private constructor(
    private readonly file: Journal,
    private readonly marks: Map<string, number>,
    /** Resets seen per chat (absent: none). What a relay queued before the last reset carries an older one. */
    private readonly epochs: Map<string, number>,
  ) {
    this.compacted = file.lines;
  }

  /** Opens the marks journalled at `path` (none when missing) and compacts the journal. */
  static open(path: string, storage: Storage = FILE_STORAGE): MsgNumMarks {
    const epochs = new Map<string, number>();
    const marks = MsgNumMarks.read(storage.readText(path), path, epochs);
    return new MsgNumMarks(storage.journal(path, MsgNumMarks.entries(marks, epochs)), marks, epochs);
  }

  /** The file's content, one mark per chat, each after its chat's reset line (so the epoch survives a rewrite). */
  private static entries(marks: Map<string, number>, epochs: Map<string, number>): unknown[] {
    const entries: unknown[] = [];
    for (const [chatId, msgNum] of marks) {
      const epoch = epochs.get(chatId);
      if (epoch !== undefined) entries.push([chatId, 0, 'reset', epoch]);
      entries.push([chatId, msgNum]);
    }
    return entries;
  }

  private static read(text: string, path: string, epochs: Map<string, number>): Map<string, number> {
    const marks = new Map<string, number>();
    // Files written before the journal held one JSON object, chat id to msg_num.
    if (text.startsWith('{')) {
      try {
        for (const [chatId, msgNum] of Object.entries(JSON.parse(text) as Record<string, unknown>)) {
          if (typeof msgNum === 'number') marks.set(chatId, msgNum);
        }
        return marks;
      } catch (error) {
        throw new Error(`${path}: unreadable marks file (${(error as Error).message})`);
      }
    }
    for (const entry of JsonLinesFile.parse(text, path, 'marks file')) {
      if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'number') {
        throw new Error(`${path}: unreadable marks file (unknown entry ${JSON.stringify(entry).slice(0, 100)})`);
      }
      // `[chat id, 0, "reset", epoch]`: the chat's history was reset, its msg_nums start again.
      if (entry[2] === 'reset') {
        marks.set(entry[0], entry[1]);
        epochs.set(entry[0], typeof entry[3] === 'number' ? entry[3] : (epochs.get(entry[0]) ?? 0) + 1);
      } else marks.set(entry[0], Math.max(entry[1], marks.get(entry[0]) ?? -1));
    }
    return marks;
  }

  /**
   * How many times the chat's history was reset. A relay stores it with what it queues: an item
   * queued before a reset shares its `<chat id>:<msg_num>` with a message of the new history, and
   * must neither stand for it nor mark it once delivered.
   */
  epoch(chatId: string): number {
    return this.epochs.get(chatId) ?? 0;
  }

  /** Whether the chat's message `msgNum` (or a later one) was marked as taken. */
  has(chatId: string, msgNum: number): boolean {
    return (this.marks.get(chatId) ?? -1) >= msgNum;
  }

  /** Marks the chat's messages up to `msgNum` as taken, written before this returns. */
  mark(chatId: string, msgNum: number): void {
    if (this.has(chatId, msgNum)) return;
    this.marks.set(chatId, msgNum);
    this.write([chatId, msgNum]);
  }

  /**
   * Appends a line, or rewrites the file with one mark per chat once the journal is twice what the last
   * rewrite left (a reset chat's mark takes two lines: against the marks alone, a file of 500 reset
   * chats would be rewritten at every mark). Amortised, one line rewritten per line appended.
   */
  private write(entry: unknown[]): void {
    if (this.file.lines < Math.max(MARKS_COMPACT_AFTER, 2 * this.compacted)) {
      this.file.append(entry);
      return;
    }
    const entries = MsgNumMarks.entries(this.marks, this.epochs);
    this.file.rewrite(entries);
    this.compacted = entries.length;
  }

  /**
   * The chat's history was reset (the supervisor's chatReset hook): its msg_nums start again at 1, so
   * the marks of the old history must not make the new messages look taken.
   */
  reset(chatId: string): void {
    if (!this.marks.has(chatId)) return;
    const epoch = this.epoch(chatId) + 1;
    this.marks.set(chatId, 0);
    this.epochs.set(chatId, epoch);
    this.write([chatId, 0, 'reset', epoch]);
  }

  /**
   * Marks by a `<chat id>:<msg_num>` key (chat ids may hold `:`; the number is after the last one),
   * unless the key was made in another epoch of the chat (before a reset: its msg_num is of the old history).
   */
  markKey(key: string, epoch = 0): void {
    const split = key.lastIndexOf(':');
    const msgNum = Number(key.slice(split + 1));
    if (split <= 0 || !Number.isInteger(msgNum)) return;
    const chatId = key.slice(0, split);
    if (epoch === this.epoch(chatId)) this.mark(chatId, msgNum);
  }
}
