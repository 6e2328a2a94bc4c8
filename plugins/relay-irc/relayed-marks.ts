import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The last msg_num relayed per chat, kept in a file written synchronously (write, then rename). After a
 * crash the supervisor may hand on again the message it was in the middle of; this says it was queued
 * already, so its lines do not go to IRC twice.
 */
export class RelayedMarks {
  private marks: Record<string, number> = {};

  private constructor(private readonly path: string) {}

  static open(path: string): RelayedMarks {
    const marks = new RelayedMarks(path);
    mkdirSync(dirname(path), { recursive: true });
    try {
      marks.marks = JSON.parse(readFileSync(path, 'utf8')) as Record<string, number>;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`${path}: unreadable (${(error as Error).message})`);
    }
    return marks;
  }

  relayed(chatId: string, msgNum: number): boolean {
    return (this.marks[chatId] ?? 0) >= msgNum;
  }

  mark(chatId: string, msgNum: number): void {
    if (this.relayed(chatId, msgNum)) return;
    this.marks[chatId] = msgNum;
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(this.marks));
    renameSync(temporary, this.path);
  }
}
