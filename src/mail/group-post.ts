import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import { BadRequestError, RateLimitError, ServerError, TransportError } from '../api/errors.js';
import { sleep } from '../chat/backoff.js';
import { htmlToText } from '../api/html-text.js';
import type { Draft, Id, Message } from '../api/types.js';
import type { KeyValueStore } from '../store/kv-store.js';

/** A post to make in a group's archive: a new topic, or a reply to a message (its topic). */
export interface GroupPostRequest {
  /** Stable across restarts: the same key posts at most once (a command's chat and msg_num, a gateway line's key). */
  key: string;
  groupId: Id;
  /** A new topic's subject (required for one); a reply's defaults to `Re: <subject>`. */
  subject?: string;
  body: string;
  bodyType?: 'text' | 'html';
  /** Reply to this message (its topic) instead of starting a topic. */
  replyTo?: Id;
}

/** What was posted: enough to name it in a confirmation and to keep it in a message map. */
export interface GroupPosted {
  messageId: Id;
  topicId: Id;
  msgNum: number;
  subject: string;
  /** Found posted already (by an earlier run, or by a call whose answer was lost): nothing new was posted now. */
  earlier: boolean;
}

/** The durable record of one post, written before every step that changes the service. */
interface PostRecord {
  /** When the first newdraft was about to be sent (ISO 8601, our clock): drafts and messages older than that are not ours. */
  startedAt: string;
  subject: string;
  body: string;
  bodyType: 'text' | 'html';
  groupId: Id;
  replyTo?: Id;
  draftId?: Id;
  done?: Omit<GroupPosted, 'earlier'>;
  doneAt?: string;
}

const PREFIX = 'group-post:';
/** Finished records kept (so a late retry of the same key is answered, not posted again). */
const KEEP_DONE = 2_000;
/** Our clock and the service's may differ a little: look this far before a record's start. */
const CLOCK_SLACK_MS = 60_000;
/** A call that failed on the way (no answer, 5xx, 429 past the client's retries) is tried again this often, pausing 0.5, 1, 2, 4 s. */
const TRANSIENT_TRIES = 4;

/**
 * Posts into a group through its drafts (newdraft, updatedraft, postdraft), never twice for one key,
 * whatever happens in between: the step reached is written to the store (flushed) before the next call
 * that changes the service. After a crash or a lost answer:
 * - no draft id kept: the draft newdraft may have made is found among the caller's drafts (same group
 *   and type, made after the record began) and used, else a new one is made;
 * - a draft id kept, the draft gone: postdraft took it (drafts are removed when posted), so the message
 *   is looked for in the group's newest messages (the caller's, same subject and body, since the record
 *   began) and that is the answer; only when it is not there either is the post made again.
 * One record per key in the plugin's own store; `durable` (Storage.durable) is awaited before each call
 * that changes the service, so a worker that lost its lease posts nothing.
 */
export class GroupPoster {
  private readonly running = new Map<string, Promise<GroupPosted>>();

  constructor(
    private readonly client: GroupsClient,
    private readonly store: KeyValueStore,
    private readonly options: { selfId: () => Id; log: Logger; durable?: () => Promise<void> },
  ) {}

  /** Whether a post for this key was finished (and what it made). */
  posted(key: string): Omit<GroupPosted, 'earlier'> | undefined {
    return this.store.get<PostRecord>(PREFIX + key)?.done;
  }

  /** Keys begun and not known to be finished (a crash came between): post() each again to finish it. */
  unfinished(): string[] {
    return this.store.keys().filter((key) => key.startsWith(PREFIX) && !this.store.get<PostRecord>(key)?.done).map((key) => key.slice(PREFIX.length));
  }

  /** Posts once for `request.key`; concurrent calls with one key share the work. */
  post(request: GroupPostRequest): Promise<GroupPosted> {
    let running = this.running.get(request.key);
    if (!running) {
      running = this.run(request).finally(() => this.running.delete(request.key));
      this.running.set(request.key, running);
    }
    return running;
  }

  private async run(request: GroupPostRequest): Promise<GroupPosted> {
    const storeKey = PREFIX + request.key;
    const kept = this.store.get<PostRecord>(storeKey);
    if (kept?.done) return { ...kept.done, earlier: true };
    let record: PostRecord;
    if (kept) record = kept;
    else {
      if (!request.replyTo && !request.subject?.trim()) throw new TypeError('a new topic needs a subject');
      record = {
        startedAt: new Date().toISOString(), subject: request.subject?.trim() ?? '', body: request.body, bodyType: request.bodyType ?? 'text',
        groupId: request.groupId, ...(request.replyTo ? { replyTo: request.replyTo } : {}),
      };
      await this.save(storeKey, record);
    }
    let transient = 0;
    for (let attempt = 0; ; attempt += 1) {
      if (attempt - transient >= 3) throw new Error(`could not post ${request.key}: the draft vanished ${attempt - transient} times without a message`);
      let draftId: Id;
      try {
        draftId = record.draftId ?? (await this.adoptDraft(record))?.id ?? (await this.newDraft(storeKey, record));
      } catch (error) {
        // A lost newdraft answer may have made a draft: the next round adopts it.
        if (!isTransient(error) || ++transient > TRANSIENT_TRIES) throw error;
        await sleep(250 * 2 ** transient);
        continue;
      }
      if (record.draftId !== draftId) {
        record = { ...record, draftId };
        await this.save(storeKey, record);
      }
      let message: Message | undefined;
      try {
        await this.options.durable?.();
        await this.client.updateDraft({
          draft_id: draftId, ...(record.subject ? { subject: record.subject } : {}), body: record.body, body_type: record.bodyType,
        });
        await this.options.durable?.();
        message = await this.client.postDraft({ draft_id: draftId });
      } catch (error) {
        if (isTransient(error) && ++transient <= TRANSIENT_TRIES) {
          // Posted or not, the next round tells: updatedraft finds the draft, or finds it gone (posted).
          this.options.log.warn({ key: request.key, error: (error as Error).message }, 'a call posting into the group failed on the way; trying again');
          await sleep(250 * 2 ** transient);
          continue;
        }
        if (!isDraftGone(error)) throw error;
        // Posted already (the answer was lost, or the process died before writing it down), or deleted.
        message = await this.findPosted(record);
        if (!message) {
          this.options.log.warn({ key: request.key }, 'the draft of a post is gone and no message of it is in the group: making it again');
          const { draftId: _gone, ...rest } = record;
          record = { ...rest, startedAt: new Date().toISOString() };
          await this.save(storeKey, record);
          continue;
        }
        this.options.log.info({ key: request.key, message_id: message.id }, 'a post was found made already: not posting it again');
      }
      const done = { messageId: message.id, topicId: message.topic_id, msgNum: message.msg_num, subject: message.subject };
      await this.save(storeKey, { ...record, done, doneAt: new Date().toISOString() });
      this.prune();
      return { ...done, earlier: false };
    }
  }

  /**
   * Gives a post up (its caller will not ask again: a command that answered its failure): the draft it
   * made, if still there, is deleted (drafts left over would pile up towards the service's limit) and
   * the record forgotten. A post that turns out to have been made is kept as done and answered.
   */
  async abandon(key: string): Promise<GroupPosted | undefined> {
    const storeKey = PREFIX + key;
    const record = this.store.get<PostRecord>(storeKey);
    if (!record || record.done) return record?.done ? { ...record.done, earlier: true } : undefined;
    if (record.draftId !== undefined) {
      try {
        await this.options.durable?.();
        await this.client.deleteDraft({ draft_id: record.draftId });
      } catch (error) {
        if (!isDraftGone(error)) throw error;
        const message = await this.findPosted(record);
        if (message) {
          const done = { messageId: message.id, topicId: message.topic_id, msgNum: message.msg_num, subject: message.subject };
          await this.save(storeKey, { ...record, done, doneAt: new Date().toISOString() });
          return { ...done, earlier: true };
        }
      }
    }
    this.store.delete(storeKey);
    await this.store.flush();
    return undefined;
  }

  private async newDraft(storeKey: string, record: PostRecord): Promise<Id> {
    await this.options.durable?.();
    const draft = record.replyTo
      ? await this.client.newDraft({ group_id: record.groupId, draft_type: 'draft_type_reply', message_id: record.replyTo })
      : await this.client.newDraft({ group_id: record.groupId, draft_type: 'draft_type_post', subject: record.subject });
    this.options.log.debug({ key: storeKey.slice(PREFIX.length), draft_id: draft.id }, 'draft made');
    return draft.id;
  }

  /** A draft newdraft made for this record before a crash kept its id from being written down. */
  private async adoptDraft(record: PostRecord): Promise<Draft | undefined> {
    const since = Date.parse(record.startedAt) - CLOCK_SLACK_MS;
    const taken = new Set(this.store.keys().filter((key) => key.startsWith(PREFIX)).map((key) => this.store.get<PostRecord>(key)?.draftId));
    for await (const draft of this.client.paginate<Draft>('getdrafts', { group_id: record.groupId, limit: 100 })) {
      if (taken.has(draft.id) || Date.parse(draft.created) < since) continue;
      const type = record.replyTo ? 'draft_type_reply' : 'draft_type_post';
      if (draft.draft_type !== type) continue;
      if (record.replyTo ? draft.message_id === record.replyTo : draft.subject.trim() === record.subject) return draft;
    }
    return undefined;
  }

  /** The message a vanished draft became: the caller's, with the record's subject and body, made since the record began. */
  private async findPosted(record: PostRecord): Promise<Message | undefined> {
    const since = Date.parse(record.startedAt) - CLOCK_SLACK_MS;
    const self = this.options.selfId();
    const body = comparable(record.body, record.bodyType);
    for await (const page of this.client.paginate<Message>('getmessages', { group_id: record.groupId, limit: 100 }).pages()) {
      for (const message of page.data) {
        if (message.user_id !== self) continue;
        if (record.subject && message.subject.trim() !== record.subject) continue;
        if (comparable(message.body, message.is_plain_text ? 'text' : 'html') === body) return message;
      }
      // Newest first: a page that reaches before the record began ends the search.
      if (page.data.some((message) => Date.parse(message.created) < since)) return undefined;
    }
    return undefined;
  }

  private async save(storeKey: string, record: PostRecord): Promise<void> {
    this.store.set(storeKey, record);
    await this.store.flush();
  }

  /** Forgets the oldest finished records past KEEP_DONE (they are only asked for again by a very late retry). */
  private prune(): void {
    const done = this.store.keys().filter((key) => key.startsWith(PREFIX))
      .map((key) => ({ key, at: this.store.get<PostRecord>(key)?.doneAt }))
      .filter((entry): entry is { key: string; at: string } => entry.at !== undefined);
    if (done.length <= KEEP_DONE) return;
    done.sort((a, b) => a.at.localeCompare(b.at));
    for (const entry of done.slice(0, done.length - KEEP_DONE)) this.store.delete(entry.key);
  }
}

/** Failures on the way, after which the same step may be tried again (the records make it safe). */
function isTransient(error: unknown): boolean {
  return error instanceof TransportError || error instanceof ServerError || error instanceof RateLimitError;
}

/** The service's answer for a draft that is not there (any more): drafts are removed when posted. */
function isDraftGone(error: unknown): boolean {
  return error instanceof BadRequestError && error.extra === 'invalid draft_id';
}

/** Bodies compared as the text they show (the service may sanitise HTML, trim, or normalise line ends). */
function comparable(body: string, type: 'text' | 'html'): string {
  return (type === 'html' ? htmlToText(body) : body).replace(/\r\n?/g, '\n').replace(/\s+/g, ' ').trim();
}
