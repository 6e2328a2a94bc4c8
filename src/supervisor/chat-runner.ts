import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import { failureFields } from '../api/failure-fields.js';
import type { ChatMessage, Id } from '../api/types.js';
import { sleep } from '../chat/backoff.js';
import type { UpgradeGate } from '../chat/upgrade-gate.js';
import { ChatConnection } from '../chat/chat-connection.js';
import { ChatSequencer, type Delivery, type HistoryReset } from '../chat/sequencer.js';
import type { RelayTag } from '../gateway/gateway-router.js';
import type { ChatInfo, ChatReset } from '../pipeline/plugin.js';
import type { CursorStore } from '../store/cursor-store.js';
import type { OutboxFile } from '../store/outbox-file.js';
import { ChatOutbox, PostFailedError, type PostRate } from './chat-outbox.js';
import { ChatSetupError, joinOrReuse, type JoinedChat } from './chat-joiner.js';
import { historyFrom, latestMessages, newestMsgNum } from './chat-history-reads.js';

export interface ChatRunnerOptions {
  client: GroupsClient;
  joined: JoinedChat;
  info: ChatInfo;
  botUserId: Id;
  log: Logger;
  cursors: CursorStore;
  outboxFile: OutboxFile;
  /** The bot's storage barrier before a post (a worker's unit: Redis); absent on files. */
  durable?: () => Promise<void>;
  rate: PostRate;
  gate: UpgradeGate;
  historyOnFirstStart: number;
  closedCheckMs: number;
  /** Hands a message to the bot's plugin chain. */
  deliver(message: ChatMessage, delivery: Delivery, chat: ChatInfo): Promise<void>;
  /** A relayed post was stored (the gateways' message map learns its id). */
  relayed(tag: RelayTag, message: ChatMessage, chat: ChatInfo): void;
  /** Tells the plugins that the chat's history was reset (their chatReset hooks). */
  chatReset(reset: ChatReset): Promise<void>;
  /**
   * The bots.yaml entry (`<group>/<chat>`) named another chat id last time (that chat is gone and this
   * one has its subject): the plugins are told before anything of this chat is handed on.
   */
  replaces?: { entry: string; chatId: Id };
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
  /** A reset for a chat made again is queued: a rejoin meanwhile must not queue a second. */
  private resetQueued = false;
  /** The newest msg_num the service is known to have (frames seen, or read by probeNewest), for the lag. */
  private newestKnown = 0;

  constructor(private readonly options: ChatRunnerOptions) {
    const { client, info, log } = options;
    const chatId = info.id;
    this.sequencer = new ChatSequencer({
      log,
      botUserId: options.botUserId,
      cursor: options.cursors.get(chatId),
      historyOnFirstStart: options.historyOnFirstStart,
      flow: { pause: () => this.connection.pause(), resume: () => this.connection.resume() },
      fetchAfter: (after) => historyFrom(client, chatId, after),
      fetchLatest: (count) => latestMessages(client, chatId, count),
      deliver: (message, delivery) => options.deliver(message, delivery, info),
      own: (message) => this.outbox.confirm(message),
      reset: (reset) => this.onReset(reset),
      saveCursor: (msgNum) => {
        options.cursors.set(chatId, msgNum);
        options.outboxFile.forgetDone(chatId, msgNum);
      },
    });
    this.outbox = new ChatOutbox({
      file: options.outboxFile,
      durable: options.durable,
      chatId,
      log,
      rate: options.rate,
      post: (text) => this.connection.post(text),
      cursor: () => this.sequencer.position,
      handled: (origin) => (options.cursors.get(origin.chatId) ?? -1) >= origin.msgNum,
      lookUp: (after) => this.confirmFromHistory(after),
      relayed: (tag, message) => options.relayed(tag, message, info),
    });
    this.connection = new ChatConnection({
      client,
      log,
      chatsubId: options.joined.chatsubId ?? '',
      gate: options.gate,
      closedCheckMs: options.closedCheckMs,
      // The history sent on connect is the catch-up with a cursor (a reconnect costs no REST call) and the
      // starting position without one (a first start costs none either): see ChatSequencer.
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
    this.connection.on('message', (message, fromHistory, wire) => {
      if (message.msg_num > this.newestKnown) this.newestKnown = message.msg_num;
      this.sequencer.live(message, fromHistory, wire);
    });
    this.connection.on('historyEnd', () => this.sequencer.historyEnded());
    this.connection.on('postRefused', (refusal) => this.outbox.refused(refusal));
    this.connection.on('deleted', () => {
      this.outbox.failAll('the chat was deleted');
      this.sequencer.stop();
    });
  }

  get info(): ChatInfo {
    return this.options.info;
  }

  start(): void {
    const replaces = this.options.replaces;
    if (replaces) void this.sequencer.recreated('replaced', this.options.cursors.get(replaces.chatId));
    else this.checkCreated(this.options.joined.chat.created);
    if (this.options.joined.chatsubId !== undefined) {
      this.connection.start();
      return;
    }
    // Closed when the bot started: it cannot be joined until it reopens.
    this.waiting = this.waitThenJoin();
  }

  /** Whether a post would be taken now (not closed, not stopped, not waiting for the chat to reopen). */
  get accepting(): boolean {
    return this.connection.state !== 'closed' && this.connection.state !== 'stopped' && !this.waiting;
  }

  post(text: string, origin?: { chatId: string; msgNum: number }, relay?: RelayTag): Promise<ChatMessage> {
    if (this.connection.state === 'closed' || this.connection.state === 'stopped' || this.waiting) {
      const why = this.connection.state === 'stopped' ? 'the bot left this chat' : 'the chat is closed';
      return Promise.reject(new PostFailedError(`post to ${this.options.info.subject} not made: ${why}`));
    }
    return this.outbox.enqueue(text, origin, relay);
  }

  /**
   * How far behind the chat the bot is: the newest msg_num known minus the cursor. While the socket is
   * down nothing new is seen, so the operations endpoint reads the newest now and then (probeNewest).
   */
  get lag(): { newest: number; behind: number } {
    const cursor = this.sequencer.position ?? 0;
    const newest = Math.max(this.newestKnown, cursor);
    return { newest, behind: newest - cursor };
  }

  /** Reads the chat's newest msg_num from the service (one getchathistory call). */
  async probeNewest(): Promise<number> {
    const newest = await newestMsgNum(this.options.client, this.options.info.id);
    if (newest > this.newestKnown) this.newestKnown = newest;
    return newest;
  }

  /** Whether the chat is waiting to be joined (it was closed when the bot started). */
  get waitingToJoin(): boolean {
    return this.waiting !== undefined;
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

  /**
   * Whether the chat id still names the chat the cursor was written for: the chat's `created` is kept
   * beside the cursor, and a chat made later under the same id (deleted and made again, or a service
   * started again from its seed) resets the chat before anything is handed on.
   */
  private checkCreated(created: string | undefined): void {
    if (created === undefined) return;
    const { cursors } = this.options;
    const known = cursors.createdOf(this.options.info.id);
    // A cursor file from before `created` was kept: this is taken as the cursor's chat from now on.
    if (known === undefined) cursors.noteCreated(this.options.info.id, created);
    else if (known !== created && !(Date.parse(created) <= Date.parse(known)) && !this.resetQueued) {
      this.resetQueued = true;
      void this.sequencer.recreated().finally(() => {
        this.resetQueued = false;
      });
    }
  }

  /**
   * The chat's history went backwards or the id names a new chat: said once, loudly; the outbox and the
   * plugins forget what they keep by msg_num; then the sequencer hands on the new history from msg_num 1.
   * The cursor is reset only after the plugins were told, so a crash in between tells them again.
   */
  private async onReset(reset: HistoryReset): Promise<void> {
    const { info, log, cursors, outboxFile } = this.options;
    const replaces = reset.reason === 'replaced' ? this.options.replaces : undefined;
    const what = reset.reason === 'replaced'
      ? `the chat entry ${replaces?.entry} named chat ${replaces?.chatId} before; that chat is gone and this one took its subject`
      : reset.reason === 'recreated'
        ? `the chat id now names a chat made after the bot's cursor was written (deleted and made again, or the service started from scratch)`
        : `the service's newest msg_num (${reset.newest}) is below the bot's cursor (${reset.previousCursor}): its history went backwards`;
    log.warn({ chat: info.subject, chatId: info.id, cursor: reset.previousCursor, newest: reset.newest, reason: reset.reason, previousChatId: replaces?.chatId },
      `chat history reset: ${what}; its messages are taken as new from msg_num 1 and the plugins are told (chatReset)`);
    let created = reset.reason !== 'behind' ? this.options.joined.chat.created : undefined;
    if (created === undefined) {
      created = await this.options.joined.directory.find(info.id, 0).then((chat) => chat?.created, () => undefined);
    }
    this.lookedUpTo = 0;
    this.newestKnown = 0;
    this.outbox.historyReset();
    outboxFile.forgetDone(info.id, Number.POSITIVE_INFINITY);
    await this.options.chatReset({
      chat: info, reason: reset.reason, previousCursor: reset.previousCursor, newest: reset.newest, at: new Date().toISOString(),
      ...(replaces ? { previousChatId: replaces.chatId } : {}),
    });
    cursors.reset(info.id, 0, created);
    if (replaces) {
      cursors.forget(replaces.chatId);
      cursors.noteEntry(replaces.entry, info.id);
    }
  }

  /** The bot's own messages past `after`, handed to the outbox to confirm its posts. */
  private async confirmFromHistory(after: number): Promise<void> {
    // What was read before need not be read again: a message offered to confirm() while the post it
    // is stayed 'sent' was taken, and a post sent later is stored after it. Reading from `after` (the
    // cursor when the post was sent) each time cost, in a backlog, the history from the cursor to the
    // end for every reply: hundreds of pages for a few pings (found by the chaos suite; with the
    // service's rate limit on it took the bot's whole budget).
    const pages = historyFrom(this.options.client, this.options.info.id, Math.max(after, this.lookedUpTo));
    for await (const message of pages) {
      if (message.user_id === this.options.botUserId) {
        this.outbox.confirm(message);
        this.sequencer.ownStored(message);
      }
      this.lookedUpTo = Math.max(this.lookedUpTo, message.msg_num);
    }
  }

  /** Joins again (the chat_sub is gone): a fresh listing says whether the bot still has one. */
  private async rejoin(): Promise<Id> {
    const { directory } = this.options.joined;
    const chat = await directory.find(this.options.info.id, 0);
    if (!chat) throw new Error('the chat is gone');
    this.checkCreated(chat.created);
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
        log.warn(failureFields(error, ChatSetupError), 'could not check or join the closed chat');
      }
    }
  }
}
