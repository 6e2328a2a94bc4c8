import { JsonLinesFile } from './json-lines-file.js';
import { OutboxIndex } from './outbox-index.js';
import { OutboxTexts } from './outbox-texts.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

/** A post the bot has to make. `sent` items wait for the service's history to show them. */
export interface OutboxItem {
  id: string;
  chatId: string;
  text: string;
  /**
   * queued → sent → done. A `done` post is kept (with what the service stored) only while the message
   * that caused it could be handed to the plugins again after a crash, so the repeat does not post twice.
   */
  state: 'queued' | 'sent' | 'done';
  /** The message being handled when the post was asked for (`<chat id> <msg_num>`), if any. */
  origin?: { chatId: string; msgNum: number };
  /** A line relayed by a gateway: its message-map record and what the post is there (see RelayTag). */
  relay?: { key: string; bus: boolean; first: boolean; part?: number };
  result?: unknown;
  queuedAt: number;
  /** The chat's cursor when it was sent: the post, once stored, has a greater msg_num. */
  sentAfter?: number;
  /**
   * Its place in the order the outbox's posts were sent (markSent): the bot's voice may go before
   * relayed lines asked earlier, and the service stores posts in the order they were sent.
   */
  sentNo?: number;
}

/** The document `outbox.json` held before the journal (before 2026-11 it was the bare array of items). */
interface LegacyDocument {
  items: OutboxItem[];
  confirmed?: Record<string, number>;
}

/**
 * One line of the journal: one change, applied whole (one append, so a crash keeps all of it or none).
 * `forget` and `confirmed` set the chats' confirming msg_nums, `put` writes items whole (a new one goes
 * last, a known one keeps its place), `del` removes items. A line never puts and removes one id.
 */
interface Entry {
  forget?: string[];
  confirmed?: Record<string, number>;
  put?: OutboxItem[];
  del?: string[];
}

/** What the journal holds: the items in the order they were added, and per chat the confirming msg_num. */
interface OutboxState {
  items: Map<string, OutboxItem>;
  confirmed: Map<string, number>;
}

/** A chat's waiting posts whose texts stay in memory (files storage): the texts of those added past them wait on disk (OutboxTexts). */
export const TEXT_WINDOW = 1000;

/**
 * Shorter texts stay in memory whatever the backlog: a text kept on disk costs its post about 400 bytes
 * of bookkeeping (bench/backlog-memory.ts), more than a short text itself.
 */
export const TEXT_ON_DISK_FROM = 512;

/** Journal lines, beyond twice the items waiting, before it is rewritten with just them. */
const COMPACT_SLACK = 500;

/**
 * A bot's outbox on disk: a journal of JSON lines (`outbox.jsonl`, see JsonLinesFile), one line per
 * change, appended synchronously before the call returns: a reply accepted is a reply that survives a
 * crash, and a change costs one line whatever the outbox holds (a backlog of thousands of posts used to
 * rewrite megabytes per change). The journal is rewritten with just the live items at open and once it
 * is longer than twice them plus COMPACT_SLACK lines: amortised, each change is still one append.
 *
 * Callers change items in place and then name them (changed(item)); a change one step makes to several
 * items (a confirmation moves the posts still waiting past it) is noted (noteChanged, noteConfirmed) and
 * written in the same line as that step's own change, so the step is on disk whole or not at all.
 */
export class OutboxFile {
  private readonly items = new Map<string, OutboxItem>();
  private readonly confirmed = new Map<string, number>();
  /** Ids of done items: forgetDone runs for every message handed on and looks only at these. */
  private readonly done = new Set<string>();
  /** Per chat: the first queued post, the sent ones, by relayed line and by origin (a post's work is not a pass over all). */
  private readonly index = new OutboxIndex<OutboxItem>();
  /** Noted changes, written with the next change (or changed()). */
  private readonly pendingItems = new Set<OutboxItem>();
  private readonly pendingChats = new Set<string>();
  private journal: Journal | undefined;
  /** The next post's place in the order of sending: past every one the file holds. */
  private nextSentNo = 0;
  /** Files storage: the texts of queued posts past TEXT_WINDOW of their chat, on disk only. */
  private texts: OutboxTexts | undefined;

  /**
   * Opens the journal at `path`; when there is none yet, the document of an earlier version at
   * `legacyPath` (`outbox.json`, by default `path` without its last letter) is read once into it and removed.
   */
  static open(path: string, storage: Storage = FILE_STORAGE, legacyPath = path.replace(/\.jsonl$/, '.json')): OutboxFile {
    const file = new OutboxFile();
    const text = storage.readText(path);
    const legacy = text === '' && legacyPath !== path ? storage.readDocument<OutboxItem[] | LegacyDocument | undefined>(legacyPath, undefined, 'outbox') : undefined;
    const state = legacy ? OutboxFile.fromLegacy(legacy) : OutboxFile.parse(text, path);
    for (const [id, item] of state.items) file.items.set(id, item);
    for (const [chatId, msgNum] of state.confirmed) file.confirmed.set(chatId, msgNum);
    for (const item of file.items.values()) {
      if (item.state === 'done') file.done.add(item.id);
      if (item.sentNo !== undefined && item.sentNo >= file.nextSentNo) file.nextSentNo = item.sentNo + 1;
      file.index.added(item);
    }
    file.journal = storage.journal(path, file.snapshot());
    // Only once the journal holds what it said (a crash before this reads the document again next time).
    // At every open, not only after a migration: a document a crash left beside a journal that has lines
    // would otherwise come back (its posts sent again) the day the journal is empty.
    if (legacyPath !== path) storage.remove(legacyPath);
    if (storage === FILE_STORAGE) {
      file.texts = new OutboxTexts(path);
      const waiting = new Map<string, number>();
      for (const item of file.items.values()) {
        if (item.state === 'done') continue;
        const count = (waiting.get(item.chatId) ?? 0) + 1;
        waiting.set(item.chatId, count);
        if (OutboxFile.textMayGo(item) && count > TEXT_WINDOW) file.texts.offload(item);
      }
    }
    return file;
  }

  /** An outbox's items and confirming msg_nums, without opening it (tools and tests; the owner may be writing). */
  static read(path: string): { items: OutboxItem[]; confirmed: Record<string, number> } {
    const state = OutboxFile.parse(JsonLinesFile.readText(path), path);
    return { items: [...state.items.values()], confirmed: Object.fromEntries(state.confirmed) };
  }

  static memory(): OutboxFile {
    return new OutboxFile();
  }

  private static fromLegacy(document: OutboxItem[] | LegacyDocument): OutboxState {
    const items = Array.isArray(document) ? document : document.items;
    const confirmed = Array.isArray(document) ? {} : document.confirmed ?? {};
    return { items: new Map(items.map((item) => [item.id, item])), confirmed: new Map(Object.entries(confirmed)) };
  }

  private static parse(text: string, path: string): OutboxState {
    const state: OutboxState = { items: new Map(), confirmed: new Map() };
    for (const entry of JsonLinesFile.parse(text, path, 'outbox entry') as Array<Entry | null>) {
      const known = entry !== null && typeof entry === 'object' && !Array.isArray(entry)
        && Object.keys(entry).length > 0 && Object.keys(entry).every((key) => ['forget', 'confirmed', 'put', 'del'].includes(key));
      if (!known) throw new Error(`${path}: unreadable outbox (unknown entry ${JSON.stringify(entry).slice(0, 100)})`);
      for (const chatId of entry.forget ?? []) state.confirmed.delete(chatId);
      for (const [chatId, msgNum] of Object.entries(entry.confirmed ?? {})) state.confirmed.set(chatId, msgNum);
      for (const item of entry.put ?? []) state.items.set(item.id, item);
      for (const id of entry.del ?? []) state.items.delete(id);
    }
    return state;
  }

  /** Every item of the chat, done ones too, in order: a pass over the whole outbox (tools, tests, failing them all). */
  forChat(chatId: string): OutboxItem[] {
    return [...this.items.values()].filter((item) => item.chatId === chatId);
  }

  /**
   * The chat's next post to send: its oldest queued post of the bot's own voice (no relay tag), else its
   * oldest queued relayed line (by when each was added: a post sent again keeps its place).
   */
  firstQueued(chatId: string): OutboxItem | undefined {
    return this.index.firstQueued(chatId);
  }

  /** Marks the item sent, last in the order of sending (the caller writes it: changed()). */
  markSent(item: OutboxItem): void {
    this.texts?.keep(item);
    item.state = 'sent';
    item.sentNo = this.nextSentNo++;
  }

  /** When the chat's oldest post not done (queued or sent) was added; undefined when none waits. */
  oldestWaitingAt(chatId: string): number | undefined {
    return this.index.oldestWaitingAt(chatId);
  }

  /** The chat's sent posts in the order they were sent: those in flight, however many are queued behind them. */
  sent(chatId: string): OutboxItem[] {
    return this.index.sent(chatId);
  }

  /** The chat's post (done ones too) of a relayed line's part. */
  byRelay(chatId: string, key: string, part: number | undefined): OutboxItem | undefined {
    return this.index.byRelay(chatId, key, part);
  }

  /** The chat's posts (done ones too) asked for while handling one message, oldest first. */
  byOrigin(chatId: string, originChatId: string, msgNum: number): OutboxItem[] {
    return this.index.byOrigin(chatId, originChatId, msgNum);
  }

  /** How many of the chat's posts are not done (queued or sent). */
  waitingCount(chatId: string): number {
    return this.index.waitingCount(chatId);
  }

  add(item: OutboxItem): void {
    this.addNoted(item);
    this.writeAdded(item);
  }

  /**
   * Adds an item as add() does, its line noted, not written: the caller writes it before the item can
   * go out or its call returns (writeAdded). A post sent at once is then one line, as sent, not a line
   * as queued and another as sent (#32 part 1: two appends before the post of each relayed line).
   */
  addNoted(item: OutboxItem): void {
    const earlier = this.items.get(item.id);
    if (earlier) {
      this.index.removed(earlier);
      this.texts?.keep(earlier);
    }
    this.items.set(item.id, item);
    this.index.added(item);
    this.pendingItems.add(item);
  }

  /** Writes what is noted (an item of addNoted() that no change wrote since); far behind the head, its text then leaves memory. */
  writeAdded(item: OutboxItem): void {
    this.write([]);
    // Written whole first (the journal keeps every text); far behind the head, the text leaves memory.
    if (this.texts && OutboxFile.textMayGo(item) && this.index.waitingCount(item.chatId) > TEXT_WINDOW) this.texts.offload(item);
  }

  /** A queued post with a long text: its text may wait on disk. */
  private static textMayGo(item: OutboxItem): boolean {
    return item.state === 'queued' && item.text.length >= TEXT_ON_DISK_FROM;
  }

  /** Posts whose text waits on disk only (files storage; at most TEXT_WINDOW waiting posts of a chat hold theirs). */
  get textsOnDisk(): number {
    return this.texts?.onDisk ?? 0;
  }

  /** The bytes of the file holding them (texts no longer needed included, until it is rewritten). */
  get textsFileBytes(): number {
    return this.texts?.fileBytes ?? 0;
  }

  /**
   * These items were changed in place (their state, text, sentAfter): written now, in one line with
   * what was noted since the last write (noteChanged, noteConfirmed, forgetConfirmed). With no items,
   * only what was noted (nothing at all when nothing was).
   */
  changed(...items: OutboxItem[]): void {
    for (const item of items) this.noteChanged(item);
    this.write([]);
  }

  /** An item changed in place as part of a step whose own change follows: written with it (changed(), remove()). */
  noteChanged(item: OutboxItem): void {
    this.pendingItems.add(item);
    if (this.items.get(item.id) === item) this.index.note(item);
  }

  /** Removes these items, and changes the others named (in place), in one line. */
  update(changed: readonly OutboxItem[], removed: readonly string[]): void {
    for (const item of changed) this.noteChanged(item);
    for (const id of removed) {
      const item = this.items.get(id);
      if (item) {
        this.index.removed(item);
        this.texts?.keep(item);
      }
      this.items.delete(id);
    }
    this.write(removed);
  }

  remove(id: string): void {
    this.update([], [id]);
  }

  /**
   * The newest msg_num that confirmed one of this chat's posts, by this process or an earlier one (0:
   * none yet). A post sent later is stored after it, so it is looked for past it: an own message the
   * previous holder of the outbox matched already is never taken for it.
   */
  confirmedThrough(chatId: string): number {
    return this.confirmed.get(chatId) ?? 0;
  }

  /** Raised with a confirmation; written in one line with the item's change that follows (changed() or remove()). */
  noteConfirmed(chatId: string, msgNum: number): void {
    if (msgNum <= this.confirmedThrough(chatId)) return;
    this.confirmed.set(chatId, msgNum);
    this.pendingChats.add(chatId);
  }

  /** The chat's history was reset: its msg_nums start again. Answers whether there was a mark (the caller writes: changed()). */
  forgetConfirmed(chatId: string): boolean {
    if (!this.confirmed.delete(chatId)) return false;
    this.pendingChats.add(chatId);
    return true;
  }

  get size(): number {
    return this.items.size;
  }

  /** The origin chat's cursor passed these messages: their posts can no longer be asked for twice. */
  forgetDone(originChatId: string, cursor: number): void {
    // Called for every message handed on: only the done posts (few) are looked at.
    if (this.done.size === 0) return;
    const gone: string[] = [];
    for (const id of this.done) {
      const item = this.items.get(id);
      if (item?.state === 'done' && item.origin?.chatId === originChatId && item.origin.msgNum <= cursor) gone.push(id);
    }
    if (gone.length > 0) this.update([], gone);
  }

  /** Writes what is pending and `removed` as one line (or, when the journal is long, the whole outbox). */
  private write(removed: readonly string[]): void {
    const entry: Entry = {};
    const forget = [...this.pendingChats].filter((chatId) => !this.confirmed.has(chatId));
    const confirmed = [...this.pendingChats].filter((chatId) => this.confirmed.has(chatId));
    if (forget.length > 0) entry.forget = forget;
    if (confirmed.length > 0) entry.confirmed = Object.fromEntries(confirmed.map((chatId) => [chatId, this.confirmed.get(chatId)!]));
    // An item removed since it was noted is not put back.
    const put = [...this.pendingItems].filter((item) => this.items.get(item.id) === item);
    if (put.length > 0) entry.put = put;
    if (removed.length > 0) entry.del = [...removed];
    for (const item of put) {
      if (item.state === 'done') this.done.add(item.id);
      else this.done.delete(item.id);
    }
    for (const id of removed) this.done.delete(id);
    this.pendingItems.clear();
    this.pendingChats.clear();
    if (!this.journal || Object.keys(entry).length === 0) return;
    // Rewritten once the journal is long for what it holds: amortised, each change is still one append.
    if (this.journal.lines >= 2 * this.items.size + COMPACT_SLACK) this.journal.rewrite(this.snapshot());
    else this.journal.append(entry);
  }

  /** The journal of an outbox holding just what this one holds: a line per item, then the confirming msg_nums. */
  private snapshot(): Entry[] {
    const entries: Entry[] = [...this.items.values()].map((item) => ({ put: [item] }));
    if (this.confirmed.size > 0) entries.push({ confirmed: Object.fromEntries(this.confirmed) });
    return entries;
  }
}
