import { readJsonFileSync, writeJsonFileSync } from './json-file-sync.js';

/**
 * The highest msg_num a relay has taken per chat, in a file written synchronously. After a crash the
 * supervisor may hand on again the message a plugin was busy with; a relay that marked it (when it
 * queued it, and again when it delivered it) knows not to send it twice.
 */
export class MsgNumMarks {
  private constructor(
    private readonly path: string,
    private readonly marks: Record<string, number>,
  ) {}

  static open(path: string): MsgNumMarks {
    return new MsgNumMarks(path, readJsonFileSync<Record<string, number>>(path, {}, 'marks file'));
  }

  has(chatId: string, msgNum: number): boolean {
    return (this.marks[chatId] ?? -1) >= msgNum;
  }

  mark(chatId: string, msgNum: number): void {
    if (this.has(chatId, msgNum)) return;
    this.marks[chatId] = msgNum;
    writeJsonFileSync(this.path, this.marks);
  }

  /** Marks by a `<chat id>:<msg_num>` key (chat ids may hold `:`; the number is after the last one). */
  markKey(key: string): void {
    const split = key.lastIndexOf(':');
    const msgNum = Number(key.slice(split + 1));
    if (split > 0 && Number.isInteger(msgNum)) this.mark(key.slice(0, split), msgNum);
  }
}
