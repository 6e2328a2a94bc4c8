import type { ChatMessage } from '../api/types.js';
import type { OutboxFile, OutboxItem } from '../store/outbox-file.js';

/**
 * Which of a chat's sent posts an own message of the bot confirms. The service does not echo a member's
 * own posts and gives a post no id of ours, so a post is recognised by its text: the oldest sent post
 * with the message's text, sent before the message was stored (its sentAfter, the chat's position
 * then, is below the message's msg_num). One message confirms one post.
 */
export class PostMatcher {
  /** msg_nums of own messages that already confirmed a post, in this process. */
  private readonly used = new Set<number>();
  /** Set by the outbox's first catch-up: from then on every sent post was sent by this process. */
  private settledOnce = false;

  constructor(private readonly file: OutboxFile, private readonly chatId: string) {}

  /**
   * The post `message` confirms among `items` (the chat's sent posts, oldest first: OutboxFile.sent()),
   * taken (it confirms no other); undefined when none.
   */
  match(message: ChatMessage, items: readonly OutboxItem[]): OutboxItem | undefined {
    if (this.used.has(message.msg_num)) return undefined;
    const item = items.find((candidate) =>
      candidate.state === 'sent' && candidate.text === message.message && (candidate.sentAfter ?? -1) < message.msg_num);
    if (!item) return undefined;
    this.used.add(message.msg_num);
    this.passed(message.msg_num, item, items);
    if (this.used.size > 1000) this.forgetOldUses(items);
    return item;
  }

  /** Where a post sent now is looked for: past the cursor and past every message that confirmed a post here. */
  sentAfter(cursor: number | undefined): number | undefined {
    const confirmed = this.file.confirmedThrough(this.chatId);
    if (cursor === undefined) return confirmed > 0 ? confirmed : undefined;
    return Math.max(cursor, confirmed);
  }

  /** The outbox caught up once: every post sent from now on is this process's. */
  settled(): void {
    this.settledOnce = true;
  }

  /**
   * The chat's history was reset (docs/protocol.md "History that goes backwards"): msg_nums start again,
   * so a sent post is looked for from the new start, and the msg_nums that confirmed posts mean nothing
   * now. What changed is noted in the file (the caller writes it once: OutboxFile.changed()); answers
   * whether anything did.
   */
  reset(items: readonly OutboxItem[]): boolean {
    this.used.clear();
    let changed = this.file.forgetConfirmed(this.chatId);
    for (const item of items) {
      if (item.state !== 'sent') continue;
      item.sentAfter = 0;
      this.file.noteChanged(item);
      changed = true;
    }
    return changed;
  }

  /**
   * `used` lives only in this process, while the next holder of the outbox (after a crash, a restart or
   * a worker's handover) reads the history from each sent post's sentAfter: it took a message that had
   * confirmed an earlier post with the same text ("pong") for a post that never reached the service,
   * and that post was lost. So what a confirmation proves is written down, in the file (with the
   * confirmed item's change the caller writes next):
   * - the chat's newest confirming msg_num (OutboxFile.confirmedThrough): a post sent later is stored
   *   after it (sentAfter());
   * - in each post still waiting, when all were sent by this process: posts go out one at a time, the
   *   service stores a socket's posts in order, and the own messages before this one were all offered
   *   to the outbox already (the history is read from the lowest sentAfter, the stream from the cursor
   *   they were sent at), so a waiting post is stored after this message, if at all. Posts left by an
   *   earlier process are not moved: their own messages may lie behind this process's stream, and the
   *   catch-up's history read offers those.
   * Both are noted in the file (noteConfirmed, noteChanged), not written: the caller's change of the
   * confirmed item writes them in the same journal line, so a crash keeps the confirmation whole or not
   * at all (without it, the next holder reads the history from the old sentAfters, as it did before).
   */
  private passed(msgNum: number, confirmed: OutboxItem, items: readonly OutboxItem[]): void {
    this.file.noteConfirmed(this.chatId, msgNum);
    if (!this.settledOnce) return;
    for (const other of items) {
      if (other !== confirmed && other.state === 'sent' && (other.sentAfter ?? -1) < msgNum) {
        other.sentAfter = msgNum;
        this.file.noteChanged(other);
      }
    }
  }

  /**
   * A msg_num at or below every sent post's sentAfter can confirm none of them, nor any post sent later
   * (sent past confirmedThrough, which its use raised): it is forgotten. Queued posts are not looked at:
   * a post's sentAfter is set anew when it is sent.
   */
  private forgetOldUses(items: readonly OutboxItem[]): void {
    const floor = Math.min(...items.map((item) => item.sentAfter ?? Infinity));
    for (const msgNum of this.used) if (msgNum <= floor) this.used.delete(msgNum);
  }
}
