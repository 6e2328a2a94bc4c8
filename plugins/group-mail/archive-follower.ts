import type { Logger } from 'pino';
import type { GroupsClient, Id, KeyValueStore, Message, MessageList } from '../../src/index.js';

/**
 * Where a group's archive was read up to: the highest msg_num handed on, and for a service whose
 * messages carry no msg_num, the newest `created` with the ids seen at exactly that time.
 */
export interface ArchiveCursor {
  msgNum: number;
  created: string;
  ids: string[];
}

/** What the follower learns about the group on each read (its id for posting, its page for links). */
export interface GroupFacts {
  id: Id;
  url: string;
}

const time = (iso: string) => Date.parse(iso) || 0;

/**
 * Follows one group's archive with getmessages (newest first, the only order every service answers),
 * reading back until it reaches what it handed on before, then handing the new messages on oldest
 * first. The cursor moves after each message was taken and is written every 50 messages and at the end
 * of each read, so a crash hands on again at most what came since, which the gateway recognises by its
 * message ids (the map) and does not post twice. The first start takes the group's
 * newest message as its position: the past is not announced.
 */
export class ArchiveFollower {
  private group: GroupFacts | undefined;

  constructor(
    private readonly name: string,
    private readonly deps: {
      client: GroupsClient;
      store: KeyValueStore;
      log: Logger;
      /** Hands one message on; resolves once its gateways took it. */
      hand: (message: Message, group: GroupFacts) => Promise<void>;
    },
  ) {}

  get facts(): GroupFacts | undefined {
    return this.group;
  }

  private get cursorKey(): string {
    return `archive:${this.name}`;
  }

  get cursor(): ArchiveCursor | undefined {
    return this.deps.store.get<ArchiveCursor>(this.cursorKey);
  }

  /** One read of the archive: answers how many new messages it handed on (counted whether or not they were announced). */
  async poll(signal: AbortSignal): Promise<number> {
    const cursor = this.cursor;
    const fresh = new Map<string, Message>();
    for await (const page of this.deps.client.paginate<Message>('getmessages', { group_name: this.name, limit: cursor ? 100 : 1 }).pages()) {
      this.learn(page as MessageList);
      if (!cursor) return this.position(page.data[0]);
      let reached = false;
      for (const message of page.data) {
        if (isAfter(message, cursor)) fresh.set(message.id, message);
        else reached = true;
      }
      // Newest first: a page that reaches a message handed on before ends the read.
      if (reached || signal.aborted) break;
    }
    const ordered = [...fresh.values()].sort(byArchiveOrder);
    for (const [index, message] of ordered.entries()) {
      if (signal.aborted) break;
      await this.deps.hand(message, this.group!);
      this.advance(message);
      // Written now and then during a long catch-up, and at the end of the read.
      if (index % 50 === 49) await this.deps.store.flush();
    }
    await this.deps.store.flush();
    return ordered.length;
  }

  private learn(page: MessageList): void {
    const group = page.group;
    if (group?.id) this.group = { id: group.id, url: group.group_url ?? '' };
  }

  /** The first start: the newest message is the position (nothing is handed on). */
  private async position(newest: Message | undefined): Promise<number> {
    const cursor: ArchiveCursor = newest ? { msgNum: newest.msg_num || 0, created: newest.created, ids: [newest.id] } : { msgNum: 0, created: '', ids: [] };
    this.deps.store.set(this.cursorKey, cursor);
    await this.deps.store.flush();
    this.deps.log.info({ group: this.name, msg_num: cursor.msgNum }, 'following the group\'s archive from its newest message');
    return 0;
  }

  private advance(message: Message): void {
    const cursor = this.cursor!;
    const msgNum = Math.max(cursor.msgNum, message.msg_num || 0);
    const next = time(message.created) > time(cursor.created) ? { msgNum, created: message.created, ids: [message.id] }
      : time(message.created) === time(cursor.created) ? { msgNum, created: cursor.created, ids: [...cursor.ids, message.id].slice(-100) }
      : { ...cursor, msgNum };
    this.deps.store.set(this.cursorKey, next);
  }
}

/** Newer than the cursor: by msg_num where both have one, else by time (ids seen at the cursor's time excluded). */
export function isAfter(message: Message, cursor: ArchiveCursor): boolean {
  if (message.msg_num > 0 && cursor.msgNum > 0) return message.msg_num > cursor.msgNum;
  const created = time(message.created);
  const at = time(cursor.created);
  return created > at || (created === at && !cursor.ids.includes(message.id));
}

export function byArchiveOrder(a: Message, b: Message): number {
  return (a.msg_num || 0) - (b.msg_num || 0) || time(a.created) - time(b.created);
}
