import type { ChatRunner } from './chat-runner.js';

/**
 * A bot's chat runners, found by chat id, by subject and by bots.yaml entry (`<group>/<chat>`): a bot
 * may be in thousands of chats. A reload takes a runner out again when its entry leaves bots.yaml.
 */
export class BotRunners {
  readonly list: ChatRunner[] = [];
  private readonly byId = new Map<string, ChatRunner>();
  private readonly bySubject = new Map<string, ChatRunner>();
  private readonly byEntry = new Map<string, ChatRunner>();

  add(runner: ChatRunner, entryKey: string): void {
    this.list.push(runner);
    this.byEntry.set(entryKey, runner);
    this.byId.set(runner.info.id, runner);
    if (!this.bySubject.has(runner.info.subject)) this.bySubject.set(runner.info.subject, runner);
  }

  /** The runner of a chat by id, else by subject (the first one with it). */
  find(key: string): ChatRunner | undefined {
    return this.byId.get(key) ?? this.bySubject.get(key);
  }

  byChatId(id: string): ChatRunner | undefined {
    return this.byId.get(id);
  }

  ofEntry(entryKey: string): ChatRunner | undefined {
    return this.byEntry.get(entryKey);
  }

  /** Takes out the runner of an entry (stopped already); another chat of the same subject is found by it from then on. */
  remove(entryKey: string): void {
    const runner = this.byEntry.get(entryKey);
    if (!runner) return;
    this.byEntry.delete(entryKey);
    this.list.splice(this.list.indexOf(runner), 1);
    this.byId.delete(runner.info.id);
    if (this.bySubject.get(runner.info.subject) !== runner) return;
    this.bySubject.delete(runner.info.subject);
    const other = this.list.find((r) => r.info.subject === runner.info.subject);
    if (other) this.bySubject.set(other.info.subject, other);
  }
}
