import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChatMessage } from '../api/types.js';
import { sleep } from '../chat/backoff.js';
import type { OutboxFile, OutboxItem } from '../store/outbox-file.js';

/**
 * How soon after a post the history is read to confirm it (then again, slower, until it shows up).
 * The service does not echo the bot's own posts, so a relayed line waits for this read before it goes
 * on to the gateway's other relays: it is read for soon, but reads of one chat are at least
 * RELAYED_SPACING_MS apart, so a burst of relayed lines costs at most 40 reads a second, not one per
 * line (a line a second, as a busy channel speaks, costs one).
 */
const CONFIRM_EVERY_MS = 150;
const RELAYED_SOON_MS = 10;
export const RELAYED_SPACING_MS = 25;

/** The service's longest chat message (docs/protocol.md "Chats"). */
export const MAX_POST_LENGTH = 10_000;

export interface PostRate {
  perSecond: number;
  burst: number;
}

export interface ChatOutboxOptions {
  file: OutboxFile;
  /** The storage's barrier (Redis for a worker's unit; absent for files, where every write is already on disk). */
  durable?: () => Promise<void>;
  chatId: string;
  log: Logger;
  rate: PostRate;
  /** Sends a chat post on the open socket; false when it is not open. */
  post(text: string): boolean;
  /** The chat's cursor now. */
  cursor(): number | undefined;
  /** Whether the message a post came from is behind its chat's cursor (then it cannot be handed on again). */
  handled?(origin: NonNullable<OutboxItem["origin"]>): boolean;
  /** A relayed post was stored: the gateways' message map learns its message id (before the chain sees it). */
  relayed?(tag: NonNullable<OutboxItem['relay']>, message: ChatMessage): void;
  /**
   * Reads the chat's history past `after` and hands the bot's own messages to confirm(). It must not
   * wait on the message queue: a plugin may be awaiting the very post being confirmed.
   */
  lookUp(after: number): Promise<void>;
}

/** A post whose promise failed: the chat is closed or deleted, or the bot stopped. */
export class PostFailedError extends Error {
  override name = 'PostFailedError';
}

/**
 * One chat's outgoing posts: queued in order, sent when the socket is open, paced by a token bucket,
 * durable (OutboxFile). The service does not echo a member's own posts, so a sent post is confirmed
 * when it shows up in the chat's history; one that never showed up by the next catch-up after a
 * reconnect was lost with the old socket and is sent again. Nothing is posted twice, nothing dropped.
 */
export class ChatOutbox {
  private readonly waiting = new Map<string, { resolve(m: ChatMessage): void; reject(e: Error): void }>();
  private tokens: number;
  private refilled = performance.now();
  private pumping = false;
  /** A pump() that came while one was running: it runs again when that one ends. */
  private pumpAgain = false;
  /** False from a (re)open until its catch-up is done: a post sent meanwhile could be mistaken for a lost one. */
  private ready = false;
  private confirmTimer: NodeJS.Timeout | undefined;
  private lastLookUp = 0;
  /** Refusals the socket brought that no post was matched with yet, oldest first. */
  private readonly refusals: Array<{ type: string; extra: string }> = [];
  private settlingRefusals = false;
  /** No post goes out before this (performance.now()): the service asked to wait (a refused post). */
  private resumeAt = 0;
  /** msg_nums of own messages that already confirmed a post: one message confirms one post. */
  private readonly used = new Set<number>();
  /** Set by the first caughtUp(): from then on every sent post was sent by this process. */
  private settledOnce = false;
  readonly stats = { sent: 0, confirmed: 0, resent: 0, failed: 0 };

  constructor(private readonly options: ChatOutboxOptions) {
    this.tokens = options.rate.burst;
  }

  get pending(): number {
    return this.items().length;
  }

  /** Posts not yet confirmed (done ones are only remembered). */
  private items(): OutboxItem[] {
    return this.options.file.forChat(this.options.chatId).filter((item) => item.state !== 'done');
  }

  /**
   * Queues a post. `origin` is the message whose handling asked for it: when that message is handed
   * on again after a crash, asking again for the same text gives the same post, not a second one.
   */
  enqueue(text: string, origin?: OutboxItem['origin'], relay?: OutboxItem['relay']): Promise<ChatMessage> {
    if (text.trim() === '') return Promise.reject(new RangeError('a chat post cannot be blank'));
    if (text.length > MAX_POST_LENGTH) {
      return Promise.reject(new RangeError(`a chat post is at most ${MAX_POST_LENGTH} characters (got ${text.length}); split it`));
    }
    // A relayed line taken again (its relay retried after a crash) is the post already queued.
    const earlier = relay
      ? this.options.file.forChat(this.options.chatId).find((item) => item.relay?.key === relay.key && item.relay.part === relay.part)
      : origin && this.options.file.forChat(this.options.chatId).find((item) =>
        item.text === text && item.origin?.chatId === origin.chatId && item.origin.msgNum === origin.msgNum && !this.waiting.has(item.id));
    if (relay && earlier) return earlier.state === 'done' ? Promise.resolve(earlier.result as ChatMessage) : this.alsoWaitFor(earlier.id);
    if (earlier?.state === 'done') return Promise.resolve(earlier.result as ChatMessage);
    if (earlier) return new Promise<ChatMessage>((resolve, reject) => this.waiting.set(earlier.id, { resolve, reject }));
    const item: OutboxItem = { id: randomUUID(), chatId: this.options.chatId, text, state: 'queued', queuedAt: Date.now(), origin };
    if (relay) item.relay = relay;
    this.options.file.add(item);
    const promise = new Promise<ChatMessage>((resolve, reject) => this.waiting.set(item.id, { resolve, reject }));
    this.pump();
    return promise;
  }

  /** A second caller waiting for the same post: both are told. */
  private alsoWaitFor(id: string): Promise<ChatMessage> {
    const before = this.waiting.get(id);
    return new Promise<ChatMessage>((resolve, reject) => this.waiting.set(id, {
      resolve: (message) => { before?.resolve(message); resolve(message); },
      reject: (error) => { before?.reject(error); reject(error); },
    }));
  }

  /** Sends what is queued while the socket is open and the bucket allows. */
  pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    void this.drain().finally(() => {
      this.pumping = false;
      if (this.pumpAgain) {
        this.pumpAgain = false;
        this.pump();
      }
    });
  }

  /** The socket closed or is reopening: hold posts until the catch-up says what the service has. */
  hold(): void {
    this.ready = false;
  }

  private async drain(): Promise<void> {
    for (;;) {
      if (!this.ready) return;
      const item = this.items().find((candidate) => candidate.state === 'queued');
      if (!item) return;
      const wait = this.resumeAt > performance.now() ? this.resumeAt - performance.now() : this.takeToken();
      if (wait > 0) {
        await sleep(wait);
        continue;
      }
      // Written as sent BEFORE it goes on the socket: a crash between the two must leave a post that the
      // next start looks for in the history (and sends again only if it is not there), never one marked
      // queued that the service already has (it would be posted twice). The write is a file save, so
      // marking after the send left a window of a millisecond or so per post.
      item.state = 'sent';
      item.sentAfter = this.sentAfterNow();
      this.options.file.changed();
      // That mark and what the post depends on (its item, the cursor) durable under the unit's lease, or it is not sent.
      if (this.options.durable) {
        try {
          await this.options.durable();
        } catch (error) {
          // Marked sent, not sent: whoever holds the unit next looks for it in the history and sends it.
          this.options.log.warn({ err: error }, 'the bot\'s unit is no longer this worker\'s: the post is left for the next holder');
          return;
        }
        // The socket dropped meanwhile: its catch-up finds the post not in the history and queues it again.
        if (!this.ready || item.state !== 'sent') continue;
      }
      if (!this.options.post(item.text)) {
        item.state = 'queued';
        delete item.sentAfter;
        this.options.file.changed();
        this.tokens += 1; // not sent: the token goes back; the next open pumps again
        return;
      }
      this.stats.sent += 1;
      this.scheduleConfirm();
    }
  }

  private takeToken(): number {
    const { perSecond, burst } = this.options.rate;
    const now = performance.now();
    this.tokens = Math.min(burst, this.tokens + ((now - this.refilled) / 1000) * perSecond);
    this.refilled = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return ((1 - this.tokens) / perSecond) * 1000;
  }

  /**
   * In a quiet chat nothing else reveals the post: look at the history shortly after sending. A relayed
   * line is read for sooner (RELAYED_SOON_MS): the gateway's other sides wait for it.
   */
  private scheduleConfirm(attempt = 0): void {
    if (this.confirmTimer) return;
    const relaying = this.items().some((item) => item.state === 'sent' && item.relay);
    let delay = CONFIRM_EVERY_MS * 2 ** attempt;
    if (relaying) {
      delay = attempt === 0 ? Math.max(RELAYED_SOON_MS, RELAYED_SPACING_MS - (performance.now() - this.lastLookUp)) : CONFIRM_EVERY_MS * 2 ** (attempt - 1);
    }
    this.confirmTimer = setTimeout(() => {
      this.confirmTimer = undefined;
      if (!this.items().some((item) => item.state === 'sent')) return;
      void this.lookUp().finally(() => {
        if (attempt < 5 && this.items().some((item) => item.state === 'sent')) this.scheduleConfirm(attempt + 1);
      });
    }, delay);
    this.confirmTimer.unref();
  }

  /**
   * The service refused a post on the socket. Which one: the service takes a socket's posts in order,
   * so every post sent before the refused one was stored or refused before the refusal came. After a
   * history read made now (which confirms what was stored), the oldest posts still unconfirmed are
   * the refused ones, one per refusal. A `rate_limit` post is sent again after the wait the service
   * names; any other refusal (an invalid message) can never succeed: that post fails, loudly.
   */
  refused(refusal: { type: string; extra: string }): void {
    this.refusals.push(refusal);
    if (this.settlingRefusals) return;
    this.settlingRefusals = true;
    void this.lookUp().finally(() => {
      this.settlingRefusals = false;
      this.settleRefusals();
    });
  }

  private settleRefusals(): void {
    const sent = this.items().filter((item) => item.state === 'sent');
    for (const [index, refusal] of this.refusals.splice(0).entries()) {
      const item = sent[index];
      if (!item) break;
      if (refusal.type === 'rate_limit') {
        const seconds = Number(/retry after (\d+(?:\.\d+)?)/i.exec(refusal.extra)?.[1] ?? 1);
        this.resumeAt = Math.max(this.resumeAt, performance.now() + seconds * 1000);
        item.state = 'queued';
        this.stats.resent += 1;
        this.options.log.info({ outboxId: item.id, retryAfterSeconds: seconds }, 'a post was refused for rate; sending it again after the wait');
        continue;
      }
      this.options.file.remove(item.id);
      this.stats.failed += 1;
      this.options.log.error({ outboxId: item.id, refusal }, 'the service refused a post; it is not sent again');
      this.waiting.get(item.id)?.reject(new PostFailedError(`post refused: ${refusal.type} ${refusal.extra}`));
      this.waiting.delete(item.id);
    }
    this.options.file.changed();
    this.pump();
  }

  /** The bot's own message showed up in the chat: it confirms the oldest sent post with that text. */
  confirm(message: ChatMessage): void {
    if (this.used.has(message.msg_num)) return;
    const item = this.items().find((candidate) =>
      candidate.state === 'sent' && candidate.text === message.message && (candidate.sentAfter ?? -1) < message.msg_num);
    if (!item) return;
    this.used.add(message.msg_num);
    this.passed(message.msg_num, item);
    if (item.relay) this.options.relayed?.(item.relay, message);
    if (this.used.size > 1000) this.forgetOldUses();
    if (item.origin && !this.options.handled?.(item.origin)) {
      item.state = 'done';
      item.result = message;
      this.options.file.changed();
    } else this.options.file.remove(item.id);
    this.stats.confirmed += 1;
    this.waiting.get(item.id)?.resolve(message);
    this.waiting.delete(item.id);
  }

  /**
   * `used` lives only in this process, while the next holder of the outbox (after a crash, a restart or
   * a worker's handover) reads the history from each sent post's sentAfter: it took a message that had
   * confirmed an earlier post with the same text ("pong") for a post that never reached the service,
   * and that post was lost. So what a confirmation proves is written down, in the file:
   * - the chat's newest confirming msg_num (OutboxFile.confirmedThrough): a post sent later is stored
   *   after it (sentAfterNow);
   * - in each post still waiting, when all were sent by this process: posts go out one at a time, the
   *   service stores a socket's posts in order, and the own messages before this one were all offered
   *   to confirm() already (the history is read from the lowest sentAfter, the stream from the cursor
   *   they were sent at), so a waiting post is stored after this message, if at all. Posts left by an
   *   earlier process are not moved: their own messages may lie behind this process's stream, and the
   *   catch-up's history read offers those.
   */
  private passed(msgNum: number, confirmed: OutboxItem): void {
    this.options.file.noteConfirmed(this.options.chatId, msgNum);
    if (!this.settledOnce) return;
    for (const other of this.items()) {
      if (other !== confirmed && other.state === 'sent' && (other.sentAfter ?? -1) < msgNum) other.sentAfter = msgNum;
    }
  }

  /** A post sent now is stored past the cursor and past every message that confirmed a post here. */
  private sentAfterNow(): number | undefined {
    const cursor = this.options.cursor();
    const confirmed = this.options.file.confirmedThrough(this.options.chatId);
    if (cursor === undefined) return confirmed > 0 ? confirmed : undefined;
    return Math.max(cursor, confirmed);
  }

  /**
   * The chat's history was reset (docs/protocol.md "History that goes backwards"): msg_nums start again,
   * so a sent post is looked for from the new start, and the msg_nums that confirmed posts mean nothing now.
   */
  historyReset(): void {
    this.used.clear();
    this.options.file.forgetConfirmed(this.options.chatId);
    let changed = false;
    for (const item of this.items()) {
      if (item.state !== 'sent') continue;
      item.sentAfter = 0;
      changed = true;
    }
    if (changed) this.options.file.changed();
  }

  /** Reads the history for the oldest sent post onwards; errors only delay confirmation. */
  private async lookUp(): Promise<void> {
    const sent = this.items().filter((item) => item.state === 'sent');
    if (sent.length === 0) return;
    const after = Math.min(...sent.map((item) => item.sentAfter ?? 0));
    this.lastLookUp = performance.now();
    try {
      await this.options.lookUp(after);
    } catch (error) {
      this.options.log.debug({ err: error }, 'could not read the history to confirm posts');
    }
  }

  private forgetOldUses(): void {
    const floor = Math.min(...this.items().map((item) => item.sentAfter ?? Infinity));
    for (const msgNum of this.used) if (msgNum <= floor) this.used.delete(msgNum);
  }

  /**
   * After a (re)open: confirms from the history what the old socket delivered, then sends the rest.
   * This reads the history directly, not through the message queue, which may be waiting on a
   * plugin that awaits one of these very posts.
   */
  async reconcile(): Promise<void> {
    await this.lookUp();
    this.caughtUp();
  }

  /**
   * After the history was read: a post still unconfirmed was sent on the old socket and never
   * stored, so it goes again (in its place, before anything queued after it).
   */
  caughtUp(): void {
    let requeued = false;
    for (const item of this.items()) {
      if (item.state !== 'sent') continue;
      item.state = 'queued';
      requeued = true;
      this.stats.resent += 1;
      this.options.log.info({ outboxId: item.id }, 'a post sent before the drop is not in the history; sending it again');
    }
    // Written only when something changed: every chat passes here on every (re)open.
    if (requeued) this.options.file.changed();
    this.ready = true;
    this.settledOnce = true;
    this.pump();
  }

  /** Fails every post of this chat (closed or deleted chat, or a stop that could not flush them). */
  failAll(reason: string): void {
    for (const item of this.items()) {
      this.options.file.remove(item.id);
      this.stats.failed += 1;
      const waiter = this.waiting.get(item.id);
      this.options.log.error({ outboxId: item.id, reason }, 'a post could not be made');
      waiter?.reject(new PostFailedError(`post not made: ${reason}`));
      this.waiting.delete(item.id);
    }
  }

  /** Waits until everything is sent and confirmed, or the time is up; answers what is left. */
  async flush(timeoutMs: number): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    while (this.pending > 0 && performance.now() < deadline) {
      await this.lookUp();
      await sleep(Math.min(200, Math.max(0, deadline - performance.now())));
    }
    return this.pending;
  }

  stop(): void {
    clearTimeout(this.confirmTimer);
    // Promises of this process end here; the posts stay in the file for the next start.
    for (const waiter of this.waiting.values()) waiter.reject(new PostFailedError('the bot stopped before the post was confirmed; it stays queued'));
    this.waiting.clear();
  }
}
