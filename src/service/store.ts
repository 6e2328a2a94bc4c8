import { mintId, type IdStyle } from './ids.js';
import type {
  ActivityEntry, Chat, ChatMessage, ChatSub, Draft, Group, Hashtag, Message, Session, Subscription, Topic, User,
} from './model.js';

/** Everything the service keeps; this is also the shape of the `--state` file. */
export interface StoreData {
  idStyle: IdStyle;
  seq: number;
  clockOffset: number;
  users: User[];
  groups: Group[];
  subscriptions: Subscription[];
  hashtags: Hashtag[];
  topics: Topic[];
  messages: Message[];
  activity: ActivityEntry[];
  chats: Chat[];
  chatSubs: ChatSub[];
  chatMessages: ChatMessage[];
  drafts: Draft[];
  sessions: Session[];
  /** `${userId} ${groupId}` -> time of the last archive download (the 24-hour rule). */
  archiveDownloads: Record<string, number>;
}

type WithoutIdentity<T> = Omit<T, 'id' | 'seq'>;

/**
 * In-memory tables with the indexes the operations need. Every mutation goes through a method here so
 * `version` moves and the state file knows to save.
 */
export class Store {
  version = 0;
  private seq = 0;
  readonly users = new Map<string, User>();
  readonly usersByEmail = new Map<string, User>();
  readonly groups = new Map<string, Group>();
  readonly groupsByName = new Map<string, Group>();
  readonly subscriptions = new Map<string, Subscription>();
  /**
   * `${userId} ${groupId}` -> every subscription of that pair (removed ones included: `removed` is set in
   * place). subscriptionOf is asked for every delivery to a chat socket (the visibility check).
   */
  private readonly subscriptionsByMember = new Map<string, Subscription[]>();
  readonly hashtags = new Map<string, Hashtag>();
  readonly topics = new Map<string, Topic>();
  readonly messages = new Map<string, Message>();
  readonly messagesByGroup = new Map<string, Message[]>();
  readonly activity = new Map<string, ActivityEntry>();
  readonly chats = new Map<string, Chat>();
  readonly chatSubs = new Map<string, ChatSub>();
  /** The chat_subs of each chat: chatSubOf is asked for every chat of every getchats page. */
  private readonly chatSubsByChat = new Map<string, ChatSub[]>();
  /** Per chat, in msg_num order. */
  readonly chatMessages = new Map<string, ChatMessage[]>();
  readonly drafts = new Map<string, Draft>();
  readonly sessions = new Map<string, Session>();
  readonly sessionsByCookie = new Map<string, Session>();
  readonly sessionsByToken = new Map<string, Session>();
  archiveDownloads: Record<string, number> = {};

  constructor(readonly idStyle: IdStyle) {}

  nextId(): { id: string; seq: number } {
    this.seq += 1;
    return { id: mintId(this.idStyle, this.seq), seq: this.seq };
  }

  touch(): void {
    this.version += 1;
  }

  private insert<T extends { id: string; seq: number }>(table: Map<string, T>, fields: WithoutIdentity<T>): T {
    const row = { ...this.nextId(), ...fields } as T;
    table.set(row.id, row);
    this.touch();
    return row;
  }

  addUser(fields: WithoutIdentity<User>): User {
    const user = this.insert(this.users, fields);
    this.usersByEmail.set(user.email.toLowerCase(), user);
    return user;
  }

  addGroup(fields: WithoutIdentity<Group>): Group {
    const group = this.insert(this.groups, fields);
    this.groupsByName.set(group.name.toLowerCase(), group);
    return group;
  }

  addSubscription(fields: WithoutIdentity<Subscription>): Subscription {
    const sub = this.insert(this.subscriptions, fields);
    listFor(this.subscriptionsByMember, `${sub.userId} ${sub.groupId}`).push(sub);
    return sub;
  }

  addHashtag(fields: WithoutIdentity<Hashtag>): Hashtag {
    return this.insert(this.hashtags, fields);
  }

  addTopic(fields: WithoutIdentity<Topic>): Topic {
    return this.insert(this.topics, fields);
  }

  addMessage(fields: WithoutIdentity<Message>): Message {
    const message = this.insert(this.messages, fields);
    listFor(this.messagesByGroup, message.groupId).push(message);
    return message;
  }

  addActivity(fields: WithoutIdentity<ActivityEntry>): ActivityEntry {
    return this.insert(this.activity, fields);
  }

  addChat(fields: WithoutIdentity<Chat>): Chat {
    const chat = this.insert(this.chats, fields);
    this.chatMessages.set(chat.id, []);
    return chat;
  }

  addChatSub(fields: WithoutIdentity<ChatSub>): ChatSub {
    const sub = this.insert(this.chatSubs, fields);
    listFor(this.chatSubsByChat, sub.chatId).push(sub);
    return sub;
  }

  addChatMessage(fields: WithoutIdentity<ChatMessage>): ChatMessage {
    const message = this.insert(new Map<string, ChatMessage>(), fields);
    listFor(this.chatMessages, message.chatId).push(message);
    return message;
  }

  addDraft(fields: WithoutIdentity<Draft>): Draft {
    return this.insert(this.drafts, fields);
  }

  addSession(session: Session): Session {
    this.sessions.set(session.id, session);
    this.sessionsByCookie.set(session.cookie, session);
    if (session.token) this.sessionsByToken.set(session.token, session);
    this.touch();
    return session;
  }

  removeChat(chat: Chat): void {
    this.chats.delete(chat.id);
    this.chatMessages.delete(chat.id);
    for (const sub of this.chatSubsByChat.get(chat.id) ?? []) this.chatSubs.delete(sub.id);
    this.chatSubsByChat.delete(chat.id);
    this.touch();
  }

  removeChatSub(sub: ChatSub): void {
    this.chatSubs.delete(sub.id);
    const ofChat = this.chatSubsByChat.get(sub.chatId)?.filter((other) => other.id !== sub.id) ?? [];
    if (ofChat.length > 0) this.chatSubsByChat.set(sub.chatId, ofChat);
    else this.chatSubsByChat.delete(sub.chatId);
    this.touch();
  }

  removeDraft(draft: Draft): void {
    this.drafts.delete(draft.id);
    this.touch();
  }

  /** The live (not removed) subscription of a user to a group. */
  subscriptionOf(userId: string, groupId: string): Subscription | undefined {
    return this.subscriptionsByMember.get(`${userId} ${groupId}`)?.find((sub) => sub.removed === undefined);
  }

  chatSubOf(userId: string, chatId: string): ChatSub | undefined {
    return this.chatSubsByChat.get(chatId)?.find((sub) => sub.userId === userId);
  }

  snapshot(clockOffset: number): StoreData {
    return {
      idStyle: this.idStyle,
      seq: this.seq,
      clockOffset,
      users: [...this.users.values()],
      groups: [...this.groups.values()],
      subscriptions: [...this.subscriptions.values()],
      hashtags: [...this.hashtags.values()],
      topics: [...this.topics.values()],
      messages: [...this.messages.values()],
      activity: [...this.activity.values()],
      chats: [...this.chats.values()],
      chatSubs: [...this.chatSubs.values()],
      chatMessages: [...this.chatMessages.values()].flat(),
      drafts: [...this.drafts.values()],
      sessions: [...this.sessions.values()],
      archiveDownloads: this.archiveDownloads,
    };
  }

  static restore(data: StoreData): Store {
    const store = new Store(data.idStyle);
    for (const user of data.users) store.addUser(user);
    for (const group of data.groups) store.addGroup(group);
    for (const row of data.subscriptions) {
      store.subscriptions.set(row.id, row);
      listFor(store.subscriptionsByMember, `${row.userId} ${row.groupId}`).push(row);
    }
    for (const row of data.hashtags) store.hashtags.set(row.id, row);
    for (const row of data.topics) store.topics.set(row.id, row);
    for (const message of data.messages) store.addMessage(message);
    for (const row of data.activity) store.activity.set(row.id, row);
    for (const chat of data.chats) store.addChat(chat);
    for (const row of data.chatSubs) {
      store.chatSubs.set(row.id, row);
      listFor(store.chatSubsByChat, row.chatId).push(row);
    }
    for (const message of data.chatMessages) store.addChatMessage(message);
    for (const row of data.drafts) store.drafts.set(row.id, row);
    for (const session of data.sessions) store.addSession(session);
    store.archiveDownloads = { ...data.archiveDownloads };
    // The add* helpers spread the stored row over a freshly minted identity, so stored ids and seqs win;
    // the counter is then put back where it was.
    store.seq = data.seq;
    store.version = 0;
    return store;
  }
}

function listFor<T>(map: Map<string, T[]>, key: string): T[] {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
}
