import type { GroupsClient } from '../api/client.js';
import { BadRequestError } from '../api/errors.js';
import type { Chat, Id } from '../api/types.js';

/** A configured chat that cannot be used as configured (not there and not to be created, not allowed). */
export class ChatSetupError extends Error {
  override name = 'ChatSetupError';
}

export type GroupParam = { group_name: string } | { group_id: Id };

/** What the directory keeps of a chat: enough to join it and to tell open from closed (not its `desc`). */
export interface ChatEntry {
  id: Id;
  subject: string;
  groupId: Id;
  isClosed: boolean;
  /** The bot's chat_sub, if it has one. */
  chatsubId: Id | undefined;
  /** When the chat was made (the service's clock): a chat id naming a newer chat was deleted and made again. */
  created?: string;
}

/**
 * One group's chats, open and closed, as one listing shared by all of a bot's chats in that group.
 * Setting up N chats reads the group's chats once (not once per chat), and chats that poll (closed
 * ones waiting to reopen, rejoins) share listings: concurrent callers wait for the same one.
 */
export class ChatDirectory {
  private byId = new Map<Id, ChatEntry>();
  private bySubject = new Map<string, ChatEntry[]>();
  /** When the last finished listing started (performance.now()); it shows the group as of then. */
  private listedAt = Number.NEGATIVE_INFINITY;
  private listing: { startedAt: number; done: Promise<void> } | undefined;

  private constructor(
    private readonly client: GroupsClient,
    /** The group as the config named it. */
    readonly name: string,
    private param: GroupParam,
  ) {}

  /** The group a config names, by name or else by id (a name is tried first: names may look like numbers). */
  static async open(client: GroupsClient, group: string): Promise<ChatDirectory> {
    const directory = new ChatDirectory(client, group, { group_name: group });
    try {
      await directory.refresh();
    } catch (error) {
      if (!(error instanceof BadRequestError && error.extra === 'invalid group_name')) throw error;
      directory.param = { group_id: group };
      await directory.refresh().catch((byId: unknown) => {
        throw byId instanceof BadRequestError ? new ChatSetupError(`no group named or numbered ${group}`) : byId;
      });
    }
    return directory;
  }

  get group(): GroupParam {
    return this.param;
  }

  /**
   * The group's chat whose id or subject is `key`, open or closed: an id match wins, then an open
   * chat, then a closed one. The listing used is at most `maxAgeMs` old (0: started after this call).
   */
  async find(key: string, maxAgeMs: number): Promise<ChatEntry | undefined> {
    await this.fresh(maxAgeMs);
    return this.lookup(key);
  }

  /** The same, from the listing as it stands. */
  lookup(key: string): ChatEntry | undefined {
    const byId = this.byId.get(key);
    if (byId) return byId;
    const named = this.bySubject.get(key);
    return named?.find((chat) => !chat.isClosed) ?? named?.[0];
  }

  /** The subjects of the group's open chats and of its closed ones as last listed, each once, in order. */
  subjects(): { open: string[]; closed: string[] } {
    const chats = [...this.byId.values()];
    const open = new Set(chats.filter((chat) => !chat.isClosed).map((chat) => chat.subject));
    const closed = new Set(chats.filter((chat) => chat.isClosed && !open.has(chat.subject)).map((chat) => chat.subject));
    return { open: [...open].sort(), closed: [...closed].sort() };
  }

  /** Notes a chat made or joined since the listing, so later lookups find it as it is now. */
  note(chat: Chat | ChatEntry): ChatEntry {
    const entry = 'object' in chat ? entryOf(chat) : chat;
    const known = this.byId.get(entry.id);
    if (known) {
      Object.assign(known, entry);
      return known;
    }
    this.add(this.byId, this.bySubject, entry);
    return entry;
  }

  /** Lists again unless the last listing started at most `maxAgeMs` ago; one listing at a time, shared. */
  private async fresh(maxAgeMs: number): Promise<void> {
    const notBefore = performance.now() - maxAgeMs;
    for (;;) {
      if (this.listedAt >= notBefore) return;
      if (this.listing && this.listing.startedAt >= notBefore) return this.listing.done;
      // A listing that started too early will not do; wait for it to end, then start one (or join the next).
      if (this.listing) await this.listing.done.catch(() => undefined);
      else await this.refresh();
    }
  }

  /** Reads the open chats, then the closed ones (getchats lists one or the other), every page. */
  private refresh(): Promise<void> {
    const startedAt = performance.now();
    const done = (async () => {
      const byId = new Map<Id, ChatEntry>();
      const bySubject = new Map<string, ChatEntry[]>();
      for (const showClosed of [false, true]) {
        for await (const chat of this.client.paginate<Chat>('getchats', { ...this.param, show_closed: showClosed, limit: 100 })) {
          // An id already seen (a chat closed between the two listings) keeps its first, open, entry.
          if (!byId.has(chat.id)) this.add(byId, bySubject, entryOf(chat));
        }
      }
      this.byId = byId;
      this.bySubject = bySubject;
      this.listedAt = Math.max(this.listedAt, startedAt);
    })();
    const listing = { startedAt, done };
    this.listing = listing;
    const clear = () => {
      if (this.listing === listing) this.listing = undefined;
    };
    done.then(clear, clear);
    return done;
  }

  private add(byId: Map<Id, ChatEntry>, bySubject: Map<string, ChatEntry[]>, entry: ChatEntry): void {
    byId.set(entry.id, entry);
    const named = bySubject.get(entry.subject);
    if (named) named.push(entry);
    else bySubject.set(entry.subject, [entry]);
  }
}

function entryOf(chat: Chat): ChatEntry {
  return { id: chat.id, subject: chat.subject, groupId: chat.group_id, isClosed: chat.is_closed, chatsubId: chat.chat_sub?.id, created: chat.created };
}
