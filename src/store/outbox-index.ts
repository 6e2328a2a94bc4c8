/** What the index reads of an outbox item (OutboxItem, without importing it: outbox-file.ts imports this file). */
export interface IndexedItem {
  chatId: string;
  state: 'queued' | 'sent' | 'done';
  origin?: { chatId: string; msgNum: number };
  relay?: { key: string; part?: number };
  /** Its place in the order posts were sent (OutboxFile.markSent); absent in files of earlier versions. */
  sentNo?: number;
  queuedAt: number;
}

/** One chat's posts, looked up by what a post needs (ChatOutbox), in the order they were added. */
class ChatIndex<T extends IndexedItem> {
  /** Not done: queued or sent. */
  readonly waiting = new Set<T>();
  /** The sent ones in the order they were sent: those in flight, few whatever waits behind them. */
  readonly sent: T[] = [];
  /**
   * Min-heaps of the queued ones by their place, the bot's own voice (posts without a relay tag) apart
   * from relayed lines; an entry whose item left `queued` is dropped when it comes up.
   */
  readonly voice: Array<{ seq: number; item: T }> = [];
  readonly relayed: Array<{ seq: number; item: T }> = [];
  readonly inHeap = new Set<T>();
  /** Relay `part|key` and origin `msgNum|chatId` -> the items (done ones too), in the order they were added. */
  readonly byRelay = new Map<string, T[]>();
  readonly byOrigin = new Map<string, T[]>();
}

/**
 * Per-chat indexes of an outbox (OutboxFile keeps them; #32 part 3): the next queued post, the sent
 * ones, the posts of a relayed line or of an origin message, how many wait and since when, each without
 * a pass over the whole outbox. With 50,000 posts waiting, a post used to cost several passes over all
 * of them. Items change in place (their state) and are then named (note()): the indexes follow then.
 *
 * The next queued post is the bot's own voice first (a post without a relay tag: a plugin's reply),
 * then relayed lines, each in the order they were added (a post requeued keeps its place): a reply does
 * not wait behind a backlog of relayed lines (docs/gateways.md "The bot's voice first"). The sent ones
 * are in the order they were sent (sentNo), which is the order the service stores them in.
 */
export class OutboxIndex<T extends IndexedItem> {
  private readonly chats = new Map<string, ChatIndex<T>>();
  /** Each indexed item's place: the order of adding. */
  private readonly seq = new Map<T, number>();
  private nextSeq = 0;

  added(item: T): void {
    this.seq.set(item, this.nextSeq++);
    const chat = this.chat(item.chatId);
    if (item.relay) push(chat.byRelay, relayKey(item.relay.key, item.relay.part), item);
    if (item.origin) push(chat.byOrigin, originKey(item.origin.chatId, item.origin.msgNum), item);
    this.note(item);
  }

  /** The item's state may have changed: the indexes follow it. */
  note(item: T): void {
    const seq = this.seq.get(item);
    if (seq === undefined) return;
    const chat = this.chat(item.chatId);
    if (item.state === 'done') chat.waiting.delete(item);
    else chat.waiting.add(item);
    if (item.state === 'queued' && !chat.inHeap.has(item)) {
      chat.inHeap.add(item);
      heapPush(item.relay ? chat.relayed : chat.voice, { seq, item });
    }
    // The sent list is short (posts in flight): found by identity, placed by the order of sending.
    // (A sent post is placed again: its sentNo may be new.)
    const at = chat.sent.indexOf(item);
    if (at >= 0) chat.sent.splice(at, 1);
    if (item.state === 'sent') chat.sent.splice(this.sentPlace(chat, item, seq), 0, item);
  }

  removed(item: T): void {
    const seq = this.seq.get(item);
    if (seq === undefined) return;
    const chat = this.chat(item.chatId);
    chat.waiting.delete(item);
    const at = chat.sent.indexOf(item);
    if (at >= 0) chat.sent.splice(at, 1);
    if (item.relay) pull(chat.byRelay, relayKey(item.relay.key, item.relay.part), item);
    if (item.origin) pull(chat.byOrigin, originKey(item.origin.chatId, item.origin.msgNum), item);
    this.seq.delete(item);
    chat.inHeap.delete(item);
    // Its heap entry is dropped when it comes up; a chat with nothing waiting drops them all now.
    if (chat.waiting.size === 0) {
      chat.voice.length = 0;
      chat.relayed.length = 0;
      chat.inHeap.clear();
    }
    if (chat.waiting.size === 0 && chat.byRelay.size === 0 && chat.byOrigin.size === 0) this.chats.delete(item.chatId);
  }

  /** The post to send next: the oldest queued one of the bot's own voice, else the oldest queued relayed line. */
  firstQueued(chatId: string): T | undefined {
    const chat = this.chats.get(chatId);
    if (!chat) return undefined;
    return this.top(chat, chat.voice) ?? this.top(chat, chat.relayed);
  }

  /**
   * When the chat's oldest waiting post (queued or sent) was added, undefined when none waits: the
   * tops of the two heaps and the sent posts (few), not a pass over what waits.
   */
  oldestWaitingAt(chatId: string): number | undefined {
    const chat = this.chats.get(chatId);
    if (!chat) return undefined;
    let oldest = Math.min(this.top(chat, chat.voice)?.queuedAt ?? Infinity, this.top(chat, chat.relayed)?.queuedAt ?? Infinity);
    for (const item of chat.sent) oldest = Math.min(oldest, item.queuedAt);
    return oldest === Infinity ? undefined : oldest;
  }

  /** The heap's oldest item still queued; entries of items that left `queued` are dropped on the way. */
  private top(chat: ChatIndex<T>, heap: Array<{ seq: number; item: T }>): T | undefined {
    for (;;) {
      const top = heap[0];
      if (!top) return undefined;
      if (top.item.state === 'queued' && this.seq.get(top.item) === top.seq) return top.item;
      heapPop(heap);
      if (this.seq.get(top.item) === top.seq) chat.inHeap.delete(top.item);
    }
  }

  sent(chatId: string): T[] {
    return [...(this.chats.get(chatId)?.sent ?? [])];
  }

  byRelay(chatId: string, key: string, part: number | undefined): T | undefined {
    return this.chats.get(chatId)?.byRelay.get(relayKey(key, part))?.[0];
  }

  byOrigin(chatId: string, originChatId: string, msgNum: number): T[] {
    return [...(this.chats.get(chatId)?.byOrigin.get(originKey(originChatId, msgNum)) ?? [])];
  }

  waitingCount(chatId: string): number {
    return this.chats.get(chatId)?.waiting.size ?? 0;
  }

  private chat(chatId: string): ChatIndex<T> {
    let chat = this.chats.get(chatId);
    if (!chat) this.chats.set(chatId, chat = new ChatIndex<T>());
    return chat;
  }

  /**
   * Where a post goes in the chat's sent list: by the order of sending (sentNo), then (posts of files
   * written before sentNo, sent in the order they were added) by place.
   */
  private sentPlace(chat: ChatIndex<T>, item: T, seq: number): number {
    const sentNo = item.sentNo ?? -1;
    let low = 0;
    let high = chat.sent.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const other = chat.sent[middle]!;
      const otherNo = other.sentNo ?? -1;
      if (otherNo < sentNo || (otherNo === sentNo && this.seq.get(other)! < seq)) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

/** The part first: it holds no `|`, so no two (key, part) pairs give one string. */
const relayKey = (key: string, part: number | undefined): string => `${part ?? ''}|${key}`;
const originKey = (chatId: string, msgNum: number): string => `${msgNum}|${chatId}`;

function push<T>(map: Map<string, T[]>, key: string, item: T): void {
  const list = map.get(key);
  if (list) list.push(item);
  else map.set(key, [item]);
}

function pull<T>(map: Map<string, T[]>, key: string, item: T): void {
  const list = map.get(key)?.filter((other) => other !== item) ?? [];
  if (list.length > 0) map.set(key, list);
  else map.delete(key);
}

function heapPush<E extends { seq: number }>(heap: E[], entry: E): void {
  heap.push(entry);
  let at = heap.length - 1;
  while (at > 0) {
    const parent = (at - 1) >>> 1;
    if (heap[parent]!.seq <= entry.seq) break;
    heap[at] = heap[parent]!;
    at = parent;
  }
  heap[at] = entry;
}

function heapPop<E extends { seq: number }>(heap: E[]): void {
  const last = heap.pop();
  if (!last || heap.length === 0) return;
  let at = 0;
  for (;;) {
    const left = 2 * at + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && heap[right]!.seq < heap[left]!.seq ? right : left;
    if (heap[child]!.seq >= last.seq) break;
    heap[at] = heap[child]!;
    at = child;
  }
  heap[at] = last;
}
