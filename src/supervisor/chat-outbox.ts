import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChatMessage } from '../api/types.js';
import { sleep } from '../chat/backoff.js';
import { readUntilDone } from './history-retry.js';
import type { QueueBacklog } from '../store/durable-queue.js';
import type { OutboxFile, OutboxItem } from '../store/outbox-file.js';
import { chatSafeText, postableText } from '../text/chat-safe-text.js';
import { PostMatcher } from './post-matcher.js';
import { PostPacer, type PostRate } from './post-pacer.js';
import { PostPromises } from './post-promises.js';

export type { PostRate } from './post-pacer.js';

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
  private readonly promises = new PostPromises();
  private readonly pacer: PostPacer;
  private readonly matcher: PostMatcher;
  private pumping = false;
  /** A pump() that came while one was running: it runs again when that one ends. */
  private pumpAgain = false;
  /** False from a (re)open until its catch-up is done: a post sent meanwhile could be mistaken for a lost one. */
  private ready = false;
  private confirmTimer: NodeJS.Timeout | undefined;
  /** Opens of the socket so far: a reconcile of an older one stops once a newer one began. */
  private opens = 0;
  private stopped = false;
  private lastLookUp = 0;
  /** Refusals the socket brought that no post was matched with yet, oldest first. */
  private readonly refusals: Array<{ type: string; extra: string }> = [];
  private settlingRefusals = false;
  readonly stats = { queued: 0, sent: 0, confirmed: 0, resent: 0, failed: 0 };

  constructor(private readonly options: ChatOutboxOptions) {
    this.pacer = new PostPacer(options.rate);
    this.matcher = new PostMatcher(options.file, options.chatId);
  }

  /** The pace of the chat's posts (`reply_rate`). */
  get rate(): PostRate {
    return this.options.rate;
  }

  /** Posts not yet confirmed (done ones are only remembered). */
  get pending(): number {
    return this.options.file.waitingCount(this.options.chatId);
  }

  /**
   * The chat's backlog for the operations endpoint (#32 part 3), in O(1): posts waiting (queued and sent
   * unconfirmed), when the oldest was queued, and the posts queued and taken (confirmed or failed) by this process.
   */
  get backlog(): QueueBacklog {
    const { file, chatId } = this.options;
    return { depth: file.waitingCount(chatId), oldestAt: file.oldestWaitingAt(chatId), pushed: this.stats.queued, taken: this.stats.confirmed + this.stats.failed };
  }

  /** Sent, unconfirmed, oldest first: a post's work looks at these and its own, never the whole backlog (#32 part 3). */
  private sent(): OutboxItem[] {
    return this.options.file.sent(this.options.chatId);
  }

  /**
   * Queues a post. `origin` is the message whose handling asked for it: when that message is handed
   * on again after a crash, asking again for the same text gives the same post, not a second one.
   */
  enqueue(asked: string, origin?: OutboxItem['origin'], relay?: OutboxItem['relay']): Promise<ChatMessage> {
    // Every post is cleaned the same way (chatSafeText): a control in a subject must not cost the whole post.
    const text = chatSafeText(asked);
    if (text.trim() === '') return Promise.reject(new RangeError('a chat post cannot be blank'));
    if (text.length > MAX_POST_LENGTH) {
      return Promise.reject(new RangeError(`a chat post is at most ${MAX_POST_LENGTH} characters (got ${text.length}); split it`));
    }
    // A relayed line taken again (its relay retried after a crash) is the post already queued.
    const { file, chatId } = this.options;
    const earlier = relay
      ? file.byRelay(chatId, relay.key, relay.part)
      : origin && file.byOrigin(chatId, origin.chatId, origin.msgNum).find((item) =>
        (item.text === text || item.text === postableText(text)) && !this.promises.has(item.id));
    // A relayed line's earlier caller may still wait for it too: promise() tells both.
    if (earlier?.state === 'done') return Promise.resolve(earlier.result as ChatMessage);
    if (earlier) return this.promises.promise(earlier.id);
    const item: OutboxItem = { id: randomUUID(), chatId: this.options.chatId, text, state: 'queued', queuedAt: Date.now(), origin };
    if (relay) item.relay = relay;
    // Noted, then written by the first write that follows: the drain's mark of it as sent, before it
    // goes on the socket, when it goes at once (one line, not a line as queued and another as sent);
    // else writeAdded(), as queued. Either way on disk before this returns.
    this.options.file.addNoted(item);
    this.stats.queued += 1;
    const promise = this.promises.promise(item.id);
    this.pump();
    this.options.file.writeAdded(item);
    return promise;
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
      const item = this.options.file.firstQueued(this.options.chatId);
      if (!item) return;
      const wait = this.pacer.wait();
      if (wait > 0) {
        await sleep(wait);
        continue;
      }
      // Written as sent BEFORE it goes on the socket: a crash between the two must leave a post that the
      // next start looks for in the history (and sends again only if it is not there), never one marked
      // queued that the service already has (it would be posted twice). The write is a file save, so
      // marking after the send left a window of a millisecond or so per post.
      this.options.file.markSent(item);
      item.sentAfter = this.matcher.sentAfter(this.options.cursor());
      this.options.file.changed(item);
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
        this.options.file.changed(item);
        this.pacer.giveBack(); // not sent: the token goes back; the next open pumps again
        return;
      }
      this.stats.sent += 1;
      this.scheduleConfirm();
    }
  }

  /**
   * In a quiet chat nothing else reveals the post: look at the history shortly after sending. A relayed
   * line is read for sooner (RELAYED_SOON_MS): the gateway's other sides wait for it.
   */
  private scheduleConfirm(attempt = 0): void {
    if (this.confirmTimer) return;
    const relaying = this.sent().some((item) => item.relay);
    let delay = CONFIRM_EVERY_MS * 2 ** attempt;
    if (relaying) {
      delay = attempt === 0 ? Math.max(RELAYED_SOON_MS, RELAYED_SPACING_MS - (performance.now() - this.lastLookUp)) : CONFIRM_EVERY_MS * 2 ** (attempt - 1);
    }
    this.confirmTimer = setTimeout(() => {
      this.confirmTimer = undefined;
      if (this.sent().length === 0) return;
      void this.lookUp().finally(() => {
        if (attempt < 5 && this.sent().length > 0) this.scheduleConfirm(attempt + 1);
      });
    }, delay);
    this.confirmTimer.unref();
  }

  /**
   * The service refused a post on the socket. Which one: the service takes a socket's posts in order,
   * so every post sent before the refused one was stored or refused before the refusal came. After a
   * history read made now (which confirms what was stored), the oldest posts still unconfirmed are
   * the refused ones, one per refusal. A `rate_limit` post is sent again after the wait the service
   * names. A post refused for its text (`invalid_value message`: a control, a lone surrogate, nothing
   * visible) is cleaned (postableText) and sent again, in its place; only one that cleaning does not
   * change, or any other refusal, can never succeed: that post fails, loudly.
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
    const sent = this.sent();
    // What the refusals change, written at the end as one line (before any promise's callback runs).
    const requeued: OutboxItem[] = [];
    const failed: Array<{ item: OutboxItem; refusal: { type: string; extra: string } }> = [];
    for (const [index, refusal] of this.refusals.splice(0).entries()) {
      const item = sent[index];
      if (!item) break;
      if (refusal.type === 'rate_limit') {
        const seconds = Number(/retry after (\d+(?:\.\d+)?)/i.exec(refusal.extra)?.[1] ?? 1);
        this.pacer.pauseFor(seconds);
        item.state = 'queued';
        requeued.push(item);
        this.stats.resent += 1;
        this.options.log.info({ outboxId: item.id, retryAfterSeconds: seconds }, 'a post was refused for rate; sending it again after the wait');
        continue;
      }
      const cleaned = refusedForText(refusal) ? postableText(item.text) : item.text;
      if (cleaned !== item.text && cleaned.trim() !== '') {
        item.text = cleaned;
        item.state = 'queued';
        delete item.sentAfter;
        requeued.push(item);
        this.stats.resent += 1;
        this.options.log.warn({ outboxId: item.id, refusal }, 'the service refused a post for its text; it is cleaned and sent again');
        continue;
      }
      failed.push({ item, refusal });
      this.stats.failed += 1;
      this.options.log.error({ outboxId: item.id, refusal }, 'the service refused a post; it is not sent again');
    }
    this.options.file.update(requeued, failed.map(({ item }) => item.id));
    for (const { item, refusal } of failed) this.promises.reject(item.id, new PostFailedError(`post refused: ${refusal.type} ${refusal.extra}`));
    this.pump();
  }

  /** The bot's own message showed up in the chat: it confirms the oldest sent post with that text. */
  confirm(message: ChatMessage): void {
    const item = this.matcher.match(message, this.sent());
    if (!item) return;
    if (item.relay) this.options.relayed?.(item.relay, message);
    // One line: this item's change, with the confirming msg_num and the posts the matcher moved past it
    // (noted by match()), so the next holder never sees the mark without the move, nor the reverse.
    if (item.origin && !this.options.handled?.(item.origin)) {
      item.state = 'done';
      item.result = message;
      this.options.file.changed(item);
    } else this.options.file.remove(item.id);
    this.stats.confirmed += 1;
    this.promises.resolve(item.id, message);
  }

  /**
   * The chat's history was reset (docs/protocol.md "History that goes backwards"): msg_nums start again,
   * so a sent post is looked for from the new start, and the msg_nums that confirmed posts mean nothing now.
   */
  historyReset(): void {
    // What reset() changed (the mark forgotten, sent posts looked for from the start) was noted: one line.
    this.matcher.reset(this.sent());
    this.options.file.changed();
  }

  /** Reads the history for the oldest sent post onwards; errors only delay confirmation. Whether it was read (or nothing needed it). */
  private async lookUp(): Promise<boolean> {
    const sent = this.sent();
    if (sent.length === 0) return true;
    const after = Math.min(...sent.map((item) => item.sentAfter ?? 0));
    this.lastLookUp = performance.now();
    try {
      await this.options.lookUp(after);
      return true;
    } catch (error) {
      this.options.log.debug({ err: error }, 'could not read the history to confirm posts');
      return false;
    }
  }

  /**
   * After a (re)open: confirms from the history what the old socket delivered, then sends the rest.
   * This reads the history directly, not through the message queue, which may be waiting on a
   * plugin that awaits one of these very posts.
   */
  async reconcile(): Promise<void> {
    const open = (this.opens += 1);
    this.stopped = false; // an open after a stop runs again
    // Only a read that succeeded tells which posts are missing; another open or a stop ends this one.
    if (await readUntilDone(() => this.lookUp(), () => open === this.opens && !this.stopped, this.options.log)) this.caughtUp();
  }

  /**
   * After the history was read: a post still unconfirmed was sent on the old socket and never
   * stored, so it goes again (in its place, before anything queued after it).
   */
  caughtUp(): void {
    const requeued: OutboxItem[] = [];
    for (const item of this.sent()) {
      item.state = 'queued';
      requeued.push(item);
      this.stats.resent += 1;
      this.options.log.info({ outboxId: item.id }, 'a post sent before the drop is not in the history; sending it again');
    }
    // Written only when something changed: every chat passes here on every (re)open.
    if (requeued.length > 0) this.options.file.changed(...requeued);
    this.ready = true;
    this.matcher.settled();
    this.pump();
  }

  /** Fails every post of this chat (closed or deleted chat, or a stop that could not flush them). */
  failAll(reason: string): void {
    // A pass over the whole outbox, once, when the chat ends (every waiting post is failed anyway).
    for (const item of this.options.file.forChat(this.options.chatId).filter((candidate) => candidate.state !== 'done')) {
      this.options.file.remove(item.id);
      this.stats.failed += 1;
      this.options.log.error({ outboxId: item.id, reason }, 'a post could not be made');
      this.promises.reject(item.id, new PostFailedError(`post not made: ${reason}`));
    }
  }

  /**
   * Waits until everything is sent and confirmed, or the time is up; answers what is left. A backlog
   * that reply_rate cannot send within the time is not waited for (#32 part 3: a stop takes seconds
   * whatever the backlog): nothing more is sent, the posts in flight are confirmed, the rest stays
   * queued on disk for the next start.
   */
  async flush(timeoutMs: number): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    const { perSecond, burst } = this.options.rate;
    if (this.pending > burst + (perSecond * timeoutMs) / 1000) this.hold();
    const waiting = () => (this.ready ? this.pending : this.sent().length);
    while (waiting() > 0 && performance.now() < deadline) {
      await this.lookUp();
      await sleep(Math.min(200, Math.max(0, deadline - performance.now())));
    }
    return this.pending;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.confirmTimer);
    // Promises of this process end here; the posts stay in the file for the next start.
    this.promises.rejectAll(new PostFailedError('the bot stopped before the post was confirmed; it stays queued'));
  }
}

/** A refusal of what the post says (not of where or how fast): cleaning the text may make it acceptable. */
function refusedForText(refusal: { type: string; extra: string }): boolean {
  if (refusal.type === 'invalid_value') return refusal.extra === 'message';
  return refusal.type === 'bad_request' && /\b(message|text)\b/i.test(refusal.extra) && !/frame|json|object/i.test(refusal.extra);
}
