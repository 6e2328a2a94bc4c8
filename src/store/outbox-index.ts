/** What the index reads of an outbox item (OutboxItem, without importing it: outbox-file.ts imports this file). */
export interface IndexedItem {
  chatId: string;
  state: 'queued' | 'sent' | 'done';
  origin?: { chatId: string; msgNum: number };
  relay?: { key: string; part?: number };
}

/** One chat's posts, looked up by what a post needs (ChatOutbox), in the order they were added. */
class ChatIndex<T extends IndexedItem> {
  /** Not done: queued or sent. */
  readonly waiting = new Set<T>();
  /** The sent ones in the order they were added: those in flight, few whatever waits behind them. */
  readonly sent: T[] = [];
  /** A min-heap of the queued ones by their place; an entry whose item left `queued` is dropped when it comes up. */
  readonly queued: Array<{ seq: number; item: T }> = [];
  readonly inHeap = new Set<T>();
  /** Relay `part|key` and origin `msgNum|chatId` -> the items (done ones too), in the order they were added. */
  readonly byRelay = new Map<string, T[]>();
  readonly byOrigin = new Map<string, T[]>();
}

/**
 * Per-chat indexes of an outbox (OutboxFile keeps them; #32 part 3): the first queued post, the sent
 * ones, the posts of a relayed line or of an origin message, and how many wait, each without a pass over
 * the whole outbox. With 50,000 posts waiting, a post used to cost several passes over all of them.
 * Items change in place (their state) and are then named (note()): the indexes follow then. The order
 * is the order items were added (a post requeued keeps its place), as the outbox's own map keeps it.
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
      heapPush(chat.queued, { seq, item });
    }
    const at = this.sentIndex(chat, seq);
    const listed = chat.sent[at] === item;
    if (item.state === 'sent' && !listed) chat.sent.splice(at, 0, item);
    if (item.state !== 'sent' && listed) chat.sent.splice(at, 1);
  }

  removed(item: T): void {
    const seq = this.seq.get(item);
    if (seq === undefined) return;
    const chat = this.chat(item.chatId);
    chat.waiting.delete(item);
    const at = this.sentIndex(chat, seq);
    if (chat.sent[at] === item) chat.sent.splice(at, 1);
    if (item.relay) pull(chat.byRelay, relayKey(item.relay.key, item.relay.part), item);
    if (item.origin) pull(chat.byOrigin, originKey(item.origin.chatId, item.origin.msgNum), item);
    this.seq.delete(item);
    chat.inHeap.delete(item);
    // Its heap entry is dropped when it comes up; a chat with nothing waiting drops them all now.
    if (chat.waiting.size === 0) {
      chat.queued.length = 0;
      chat.inHeap.clear();
    }
    if (chat.waiting.size === 0 && chat.byRelay.size === 0 && chat.byOrigin.size === 0) this.chats.delete(item.chatId);
  }

  firstQueued(chatId: string): T | undefined {
    const chat = this.chats.get(chatId);
    if (!chat) return undefined;
    for (;;) {
      const top = chat.queued[0];
      if (!top) return undefined;
      if (top.item.state === 'queued' && this.seq.get(top.item) === top.seq) return top.item;
      heapPop(chat.queued);
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

  /** Where an item of place `seq` is, or goes, in the chat's sent list (binary search). */
  private sentIndex(chat: ChatIndex<T>, seq: number): number {
    let low = 0;
    let high = chat.sent.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.seq.get(chat.sent[middle]!)! < seq) low = middle + 1;
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
