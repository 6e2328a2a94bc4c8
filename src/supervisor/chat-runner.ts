import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import type { ChatMessage, Id } from '../api/types.js';
import { sleep } from '../chat/backoff.js';
import type { UpgradeGate } from '../chat/upgrade-gate.js';
import { ChatConnection } from '../chat/chat-connection.js';
import { ChatSequencer, type Delivery } from '../chat/sequencer.js';
import type { ChatInfo } from '../pipeline/plugin.js';
import type { CursorStore } from '../store/cursor-store.js';
import type { OutboxFile } from '../store/outbox-file.js';
import { ChatOutbox, PostFailedError, type PostRate } from './chat-outbox.js';
import { joinOrReuse, type JoinedChat } from './chat-joiner.js';

export interface ChatRunnerOptions {
  client: GroupsClient;
  joined: JoinedChat;
  info: ChatInfo;
  botUserId: Id;
  log: Logger;
  cursors: CursorStore;
  outboxFile: OutboxFile;
  rate: PostRate;
  gate: UpgradeGate;
  historyOnFirstStart: number;
  closedCheckMs: number;
  /** Hands a message to the bot's plugin chain. */
  deliver(message: ChatMessage, delivery: Delivery, chat: ChatInfo): Promise<void>;
}

/**
 * One chat of one bot: its socket (ChatConnection), exactly-once ordering (ChatSequencer) and its
 * outgoing posts (ChatOutbox), wired together.
 */
export class ChatRunner {
  readonly connection: ChatConnection;
  readonly sequencer: ChatSequencer;
  readonly outbox: ChatOutbox;
  private readonly stopper = new AbortController();
  private waiting: Promise<void> | undefined;
  /** The newest msg_num confirmFromHistory has handed to the outbox, every one before it included. */
  private lookedUpTo = 0;

  constructor(private readonly options: ChatRunnerOptions) {
    const { client, info, log } = options;
    const chatId = info.id;
    this.sequencer = new ChatSequencer({
      log,
      botUserId: options.botUserId,
      cursor: options.cursors.get(chatId),
      historyOnFirstStart: options.historyOnFirstStart,
      flow: { pause: () => this.connection.pause(), resume: () => this.connection.resume() },
      fetchAfter: (after) => client.paginate<ChatMessage>('getchathistory', { chat_id: chatId, start_msg_num: after, sort_dir: 'asc', limit: 100 }),
      fetchLatest: (count) => this.latest(count),
      deliver: (message, delivery) => options.deliver(message, delivery, info),
      own: (message) => this.outbox.confirm(message),
      saveCursor: (msgNum) => {
        options.cursors.set(chatId, msgNum);
        options.outboxFile.forgetDone(chatId, msgNum);
      },
    });
    this.outbox = new ChatOutbox({
      file: options.outboxFile,
      chatId,
      log,
      rate: options.rate,
      post: (text) => this.connection.post(text),
      cursor: () => this.sequencer.position,
      handled: (origin) => (options.cursors.get(origin.chatId) ?? -1) >= origin.msgNum,
      lookUp: (after) => this.confirmFromHistory(after),
    });
    this.connection = new ChatConnection({
      client,
      log,
      chatsubId: options.joined.chatsubId ?? '',
      gate: options.gate,
      closedCheckMs: options.closedCheckMs,
      // With a cursor the history sent on connect is the catch-up: a reconnect costs no REST call.
      history: () => this.sequencer.wantsHistory,
      rejoin: () => this.rejoin(),
      isOpen: () => this.isOpen(),
    });
    this.connection.on('open', (history) => {
      this.outbox.hold();
      this.sequencer.opened(history);
      void this.outbox.reconcile();
    });
    this.connection.on('state', (state) => {
      if (state !== 'open') this.outbox.hold();
      if (state === 'closed') this.outbox.failAll('the chat is closed');
    });
    this.connection.on('message', (message, fromHistory) => this.sequencer.live(message, fromHistory));
    this.connection.on('deleted', () => {
      this.outbox.failAll('the chat was deleted');
      this.sequencer.stop();
    });
  }

  get info(): ChatInfo {
    return this.options.info;
  }

  start(): void {
    if (this.options.joined.chatsubId !== undefined) {
      this.connection.start();
      return;
    }
    // Closed when the bot started: it cannot be joined until it reopens.
    this.waiting = this.waitThenJoin();
  }

  post(text: string, origin?: { chatId: string; msgNum: number }): Promise<ChatMessage> {
    if (this.connection.state === 'closed' || this.connection.state === 'stopped' || this.waiting) {
      const why = this.connection.state === 'stopped' ? 'the bot left this chat' : 'the chat is closed';
      return Promise.reject(new PostFailedError(`post to ${this.options.info.subject} not made: ${why}`));
    }
    return this.outbox.enqueue(text, origin);
  }

  /** Settled: open, or waiting for a closed chat, or given up. */
  get settled(): boolean {
    const state = this.connection.state;
    return state === 'open' || state === 'closed' || state === 'stopped' || this.waiting !== undefined;
  }

  /** Stops taking messages, lets the outbox flush within the bound, then closes the socket (1000). */
  async stop(flushMs: number): Promise<void> {
    this.stopper.abort();
    // No new message is handed on (its cursor stays where it is, for the next start); the one being
    // handled finishes.
    this.sequencer.stop();
    await this.sequencer.idle();
    const left = await this.outbox.flush(flushMs);
    if (left > 0) this.options.log.warn({ posts: left }, 'posts still queued at stop; they go out on the next start');
    await this.connection.stop();
    await this.waiting;
    this.outbox.stop();
  }

  /** The bot's own messages past `after`, handed to the outbox to confirm its posts. */
  private async confirmFromHistory(after: number): Promise<void> {
    // What was read before need not be read again: a message offered to confirm() while the post it
    // is stayed 'sent' was taken, and a post sent later is stored after it. Reading from `after` (the
    // cursor when the post was sent) each time cost, in a backlog, the history from the cursor to the
    // end for every reply: hundreds of pages for a few pings (found by the chaos suite; with the
    // service's rate limit on it took the bot's whole budget).
    const pages = this.options.client.paginate<ChatMessage>('getchathistory', {
      chat_id: this.options.info.id, start_msg_num: Math.max(after, this.lookedUpTo), sort_dir: 'asc', limit: 100,
    });
    for await (const message of pages) {
      if (message.user_id === this.options.botUserId) this.outbox.confirm(message);
      this.lookedUpTo = Math.max(this.lookedUpTo, message.msg_num);
    }
  }

  private async latest(count: number): Promise<ChatMessage[]> {
    const messages: ChatMessage[] = [];
    const pages = this.options.client.paginate<ChatMessage>('getchathistory', {
      chat_id: this.options.info.id, sort_dir: 'desc', limit: Math.min(100, count),
    }).pages();
    for await (const page of pages) {
      messages.push(...page.data);
      if (messages.length >= count) break;
    }
    return messages.slice(0, count).reverse();
  }

  /** Joins again (the chat_sub is gone): a fresh listing says whether the bot still has one. */
  private async rejoin(): Promise<Id> {
    const { directory } = this.options.joined;
    const chat = await directory.find(this.options.info.id, 0);
    if (!chat) throw new Error('the chat is gone');
    const id = chat.chatsubId ?? (await joinOrReuse(this.options.client, chat, directory));
    this.options.info.chatsubId = id;
    return id;
  }

  /**
   * Whether the chat is open again. Closed chats poll this every closedCheckMs; they share the group's
   * listing when it is at most half that old, so many closed chats cost about two listings a period.
   */
  private async isOpen(): Promise<boolean> {
    const chat = await this.options.joined.directory.find(this.options.info.id, this.options.closedCheckMs / 2);
    return chat !== undefined && !chat.isClosed;
  }

  private async waitThenJoin(): Promise<void> {
    const log = this.options.log;
    log.info('the chat is closed; waiting for it to reopen before joining');
    while (!this.stopper.signal.aborted) {
      await sleep(this.options.closedCheckMs, this.stopper.signal);
      if (this.stopper.signal.aborted) return;
      try {
        if (!(await this.isOpen())) continue;
        this.connection.chatsubId = await this.rejoin();
        this.waiting = undefined;
        log.info('the chat reopened; joined');
        this.connection.start();
        return;
      } catch (error) {
        log.warn({ err: error }, 'could not check or join the closed chat');
      }
    }
  }
}
