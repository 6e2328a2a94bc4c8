import type { Logger } from 'pino';
import { Backoff, failureFields, sleep, type KeyValueStore } from '../../src/index.js';
import { isLostQueue, isRefusal, type ZulipClient } from './client.js';

/** A message as the event queue and GET /messages give it (`apply_markdown=false`: the content as typed). */
export interface ZulipMessage {
  id: number;
  sender_id: number;
  sender_full_name: string;
  content: string;
  subject: string;
  stream_id?: number;
  type: string;
  timestamp: number;
}

/** An event of the queue the relay reads. */
export interface ZulipEvent {
  id: number;
  type: string;
  message?: ZulipMessage;
  /** A `message` event of the relay's own send: the `local_id` it sent with (its queue's echo). */
  local_message_id?: string;
  message_id?: number;
  message_ids?: number[];
  stream_id?: number;
  content?: string;
  rendering_only?: boolean;
  user_id?: number | null;
  edit_timestamp?: number;
}

export interface IntakeCounters {
  registers: number;
  queues_lost: number;
  polls: number;
  caught_up: number;
}

/** What the intake of one stream hands on, in the order Zulip made it. */
export interface IntakeHandler {
  /** A new message of someone else: handed on (awaited) before the mark moves past it. */
  message(message: ZulipMessage, caughtUp: boolean): Promise<void>;
  /** The echo of the relay's own send (`local_id` → message id). */
  echo(localId: string | undefined, message: ZulipMessage): void;
  edit(messageId: number, content: string, editedAt: number | undefined): Promise<void>;
  delete(messageId: number): Promise<void>;
}

/** Messages GET /messages answers a page (the server allows 5,000; smaller pages hand on sooner). */
const PAGE = 500;
const MARK_KEY = (streamId: number) => `mark:${streamId}`;
const EVENT_TYPES = JSON.stringify(['message', 'update_message', 'delete_message']);

/**
 * One stream's intake, once each and in order: an event queue (POST /register narrowed to the stream,
 * then GET /events long-polled with `last_event_id`, which acknowledges what came before) and a mark in
 * the plugin's store, the id of the last message handed on (Zulip's ids only grow). After each register
 * (a start, a queue the server dropped: BAD_EVENT_QUEUE_ID) what the stream said after the mark is read
 * from GET /messages, paged, before the queue's events; a message seen both ways goes once. A stream the
 * relay never read starts at the server's newest message (register's `max_message_id`).
 */
export class StreamIntake {
  /** The queue the relay's sends name (`queue_id`): their events then carry the send's `local_id`. */
  queueId: string | undefined;
  private readonly backoff = new Backoff(500, 30_000);

  constructor(
    private readonly options: {
      client: () => ZulipClient;
      store: KeyValueStore;
      log: Logger;
      counters: IntakeCounters;
      stream: { id: number; name: string };
      self: () => number;
      handler: IntakeHandler;
      stopping: AbortSignal;
      connected: () => void;
      trouble: (detail: string) => void;
      refused: (error: unknown) => void;
      /** The server's `max_file_upload_size_mib`, as register says it. */
      uploadLimitMib?: (mib: number) => void;
    },
  ) {}

  get streamId(): number {
    return this.options.stream.id;
  }

  get streamName(): string {
    return this.options.stream.name;
  }

  get mark(): number | undefined {
    return this.options.store.get<number>(MARK_KEY(this.options.stream.id));
  }

  /** Registers, catches up and polls until the relay stops or the key is refused; a lost queue is registered again. */
  async run(): Promise<void> {
    const { stopping, log, stream } = this.options;
    while (!stopping.aborted) {
      try {
        const queue = await this.register();
        await this.fill();
        this.options.connected();
        await this.poll(queue.lastEventId);
      } catch (error) {
        if (stopping.aborted) return;
        if (isRefusal(error)) return this.options.refused(error);
        this.queueId = undefined;
        if (isLostQueue(error)) {
          this.options.counters.queues_lost += 1;
          log.info({ stream: stream.name }, 'Zulip dropped the event queue: registering again and reading what the stream said meanwhile');
          continue;
        }
        this.options.trouble(`cannot reach the server: ${(error as Error).message}`);
        log.warn({ stream: stream.name, ...failureFields(error) }, 'could not read the Zulip stream; trying again');
        await sleep(this.backoff.next(), stopping);
      }
    }
  }

  private async register(): Promise<{ lastEventId: number }> {
    const { stream, store } = this.options;
    const answer = await this.options.client().call<{ queue_id: string; last_event_id: number; max_message_id: number; max_file_upload_size_mib?: number }>('POST', '/register', {
      event_types: EVENT_TYPES,
      narrow: JSON.stringify([['stream', stream.name]]),
      apply_markdown: false,
      client_gravatar: true,
    });
    this.options.counters.registers += 1;
    this.queueId = answer.queue_id;
    if (typeof answer.max_file_upload_size_mib === 'number') this.options.uploadLimitMib?.(answer.max_file_upload_size_mib);
    if (this.mark === undefined) {
      store.set(MARK_KEY(stream.id), answer.max_message_id);
      this.options.log.info({ stream: stream.name }, 'first start: relaying what the Zulip stream says from now on');
    }
    return { lastEventId: answer.last_event_id };
  }

  /** What the stream said after the mark, oldest first, page by page. */
  private async fill(): Promise<void> {
    const { stream } = this.options;
    for (;;) {
      const anchor = this.mark ?? 0;
      const page = await this.options.client().get<{ messages: ZulipMessage[]; found_newest?: boolean }>('/messages', {
        anchor, num_before: 0, num_after: PAGE, include_anchor: false, apply_markdown: false, client_gravatar: true,
        narrow: JSON.stringify([['stream', stream.name]]),
      });
      const messages = (page.messages ?? []).filter((message) => message.id > anchor).toSorted((a, b) => a.id - b.id);
      for (const message of messages) await this.take(message, true);
      if (page.found_newest !== false || messages.length === 0) return;
    }
  }

  /** Long-polls the queue; a failed poll is asked again from the same event (the server keeps what was not acknowledged). */
  private async poll(lastEventId: number): Promise<void> {
    const { stopping, log, stream } = this.options;
    let last = lastEventId;
    while (!stopping.aborted) {
      let events: ZulipEvent[];
      try {
        const answer = await this.options.client().get<{ events: ZulipEvent[] }>('/events', { queue_id: this.queueId, last_event_id: last }, { extraMs: 90_000 });
        events = answer.events ?? [];
        this.options.counters.polls += 1;
        this.backoff.reset();
      } catch (error) {
        if (stopping.aborted || isRefusal(error) || isLostQueue(error)) throw error;
        this.options.trouble(`the event queue did not answer: ${(error as Error).message}`);
        log.warn({ stream: stream.name, ...failureFields(error) }, 'a Zulip poll failed; asking again');
        await sleep(this.backoff.next(), stopping);
        continue;
      }
      this.options.connected();
      for (const event of events) {
        await this.event(event);
        last = Math.max(last, event.id);
      }
    }
  }

  private async event(event: ZulipEvent): Promise<void> {
    const { stream, handler } = this.options;
    if (event.type === 'message' && event.message) {
      if (event.message.stream_id !== undefined && event.message.stream_id !== stream.id) return;
      if (event.message.sender_id === this.options.self()) handler.echo(event.local_message_id, event.message);
      await this.take(event.message, false);
    } else if (event.type === 'update_message') {
      // A topic moved or a link preview rendered changes no text; the relay's own edits are not news.
      if (event.stream_id !== stream.id || event.rendering_only || event.content === undefined || event.message_id === undefined) return;
      if (event.user_id === this.options.self()) return;
      await handler.edit(event.message_id, event.content, event.edit_timestamp);
    } else if (event.type === 'delete_message') {
      if (event.stream_id !== undefined && event.stream_id !== stream.id) return;
      for (const id of event.message_ids ?? (event.message_id !== undefined ? [event.message_id] : [])) await handler.delete(id);
    }
  }

  /** A message after the mark: handed on (unless it is the relay's own), then the mark moves past it. */
  private async take(message: ZulipMessage, caughtUp: boolean): Promise<void> {
    if (message.id <= (this.mark ?? 0)) return;
    if (message.sender_id !== this.options.self()) {
      await this.options.handler.message(message, caughtUp);
      if (caughtUp) this.options.counters.caught_up += 1;
    }
    this.options.store.set(MARK_KEY(this.options.stream.id), message.id);
  }
}
