import type { ChatMessage } from '../api/types.js';

export interface OwnPostsOptions {
  /** The chat's messages after `msgNum`, oldest first (getchathistory). */
  readHistory(afterMsgNum: number): Promise<ChatMessage[]>;
  /** Whose posts these are. */
  userId: string;
  /** A post is in the chat: the message as the service stored it (time, name, msg_num). */
  stored(message: ChatMessage): void;
}

interface Pending {
  text: string;
  /** The newest msg_num known when it was sent: its message comes after this. */
  after: number;
}

/**
 * The posts `groupwire chat` sent and the service has not yet shown to have stored. The chat socket
 * does not echo one's own posts (docs/protocol.md), so each is confirmed by reading the chat's
 * history: the oldest pending post with the same text, after the newest msg_num known when it was sent.
 */
export class OwnPosts {
  private readonly pending: Pending[] = [];
  // msg_nums that already confirmed a post: one message confirms one post.
  private readonly used = new Set<number>();
  private newest = 0;
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private attempt = 0;

  constructor(private readonly options: OwnPostsOptions) {}

  get count(): number {
    return this.pending.length;
  }

  /** A message the socket delivered (history or live): confirmation looks after the newest. */
  seen(msgNum: number): void {
    if (msgNum > this.newest) this.newest = msgNum;
  }

  sent(text: string): void {
    this.pending.push({ text, after: this.newest });
    this.attempt = 0;
    this.schedule();
  }

  /**
   * The service refused a post on the socket. It answers frames in order, so every post sent before
   * the refused one is stored by now: after one look at the history, the oldest still pending is it.
   */
  refused(): Promise<string | undefined> {
    return this.serialized(async () => {
      await this.lookUp();
      return this.pending.shift()?.text;
    });
  }

  /**
   * Waits until every post is confirmed or `timeoutMs` passed without progress; answers the texts
   * not confirmed.
   */
  async settle(timeoutMs: number): Promise<string[]> {
    let deadline = Date.now() + timeoutMs;
    for (let wait = 100; this.pending.length > 0 && Date.now() < deadline; wait = Math.min(wait * 2, 2000)) {
      const before = this.pending.length;
      await this.serialized(() => this.lookUp()).catch(() => undefined);
      if (this.pending.length < before) deadline = Date.now() + timeoutMs;
      if (this.pending.length > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    this.stop();
    return this.pending.map((post) => post.text);
  }

  /** Looks at the history now for pending posts (never throws): before showing a line that came after them. */
  confirmNow(): Promise<void> {
    return this.serialized(() => this.lookUp()).catch(() => undefined);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  // Looks again soon while posts are pending: quickly at first, then less often.
  private schedule(): void {
    if (this.timer || this.pending.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.attempt += 1;
      this.serialized(() => this.lookUp()).catch(() => undefined).finally(() => this.schedule());
    }, Math.min(150 * 2 ** this.attempt, 3000));
    this.timer.unref();
  }

  private serialized<T>(task: () => Promise<T>): Promise<T> {
    const result = this.chain.then(task);
    this.chain = result.then(() => undefined, () => undefined);
    return result;
  }

  private async lookUp(): Promise<void> {
    if (this.pending.length === 0) return;
    const after = Math.min(...this.pending.map((post) => post.after));
    for (const message of await this.options.readHistory(after)) {
      this.seen(message.msg_num);
      if (String(message.user_id) !== this.options.userId || this.used.has(message.msg_num)) continue;
      const index = this.pending.findIndex((post) => post.text === message.message && post.after < message.msg_num);
      if (index === -1) continue;
      this.used.add(message.msg_num);
      this.pending.splice(index, 1);
      this.options.stored(message);
    }
  }
}
