import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The last msg_num queued for Slack, per chat, written synchronously (write, then rename) right after
 * the queue took the message. The supervisor may hand a message on again after a crash; this (and
 * the queue's own contents) keeps it from being posted twice.
 */
export class QueuedMarks {
  private marks: Record<string, number> = {};

  constructor(private readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    try {
      this.marks = JSON.parse(readFileSync(path, 'utf8')) as Record<string, number>;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`${path}: unreadable (${(error as Error).message})`);
    }
  }

  /** True when this chat's message was queued before. */
  has(chatId: string, msgNum: number): boolean {
    return (this.marks[chatId] ?? -1) >= msgNum;
  }

  set(chatId: string, msgNum: number): void {
    if (this.has(chatId, msgNum)) return;
    this.marks[chatId] = msgNum;
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(this.marks));
    renameSync(temporary, this.path);
  }
}
