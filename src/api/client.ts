import type { Logger } from 'pino';
import { pino } from 'pino';
import type WebSocket from 'ws';
import type { Readable } from 'node:stream';
import { openAttachment } from './attachment-download.js';
import { downloadArchiveToFile, type DownloadOptions, type DownloadResult } from './archive-download.js';
import { CallCounts } from './call-counts.js';
import { multipart, normalizeLists } from './call-wire.js';
import { BadCsrfError, GroupsError } from './errors.js';
import { openChatSocket, type ChatSocketOptions } from './chat-socket.js';
import { isOperation, OPERATIONS, type OperationName } from './operations.js';
import { checkLimit, Paginator } from './paginate.js';
import type * as P from './params.js';
import { withRetries, type RetryOptions } from './retry.js';
import { Session, type Credentials } from './session.js';
import { Transport, type TransportOptions, type WireParams } from './transport.js';
import type {
  ActivityLogEntry, Chat, ChatMessage, ChatSub, Database, Draft, Group, GroupSubscription, List, MemberInfo, Message, MessageList,
  SearchHit, Success, TopicList, User,
} from './types.js';

/** Where the service is, how to log in, and how the client retries and logs. */
export interface GroupsClientOptions extends Omit<TransportOptions, 'baseUrl'> {
  /** `https://host[:port]`; give this or `enterpriseUrl`. */
  baseUrl?: string;
  /** The enterprise domain address: the same interface under another host. */
  enterpriseUrl?: string;
  /** How to log in: an e-mail address and password, or an API token. Without them only open calls work. */
  credentials?: Credentials;
  /** Retries of rate-limited and failed calls (default: the client's own backoff). */
  retry?: RetryOptions;
  /** Where the client logs its retries and re-logins (default: nowhere). */
  logger?: Logger;
}

/** `[result, user]` when the call asked for `extended: true` (spec 2.3a), else the result. */
export type Extended<Params, Result> = 'extended' extends keyof Params
  ? Params extends { extended: true } ? [Result, User]
    : Params extends { extended?: false | undefined } ? Result
    : Result | [Result, User] // `extended` is a boolean known only at run time
  : Result;

/**
 * A typed client for the whole described interface. Paging, retries with backoff, re-login and
 * csrf refresh, huge identifiers and the archive download are handled here, once.
 */
export class GroupsClient {
  /** The HTTP side of the client: the supervisor's and the tests' business, not a promise to users. @internal */
  readonly transport: Transport;
  /** The login state (cookie, token, csrf): the supervisor's and the tests' business, not a promise to users. @internal */
  readonly session: Session;
  /** Every attempt's answer by operation (the operations endpoint's REST metrics). */
  readonly calls = new CallCounts();
  private readonly log: Logger;
  private readonly retry: RetryOptions | undefined;
  private pendingCsrf: Promise<void> | undefined;

  constructor(options: GroupsClientOptions) {
    const baseUrl = options.enterpriseUrl ?? options.baseUrl;
    if (!baseUrl) throw new TypeError('GroupsClient needs a baseUrl (or an enterpriseUrl)');
    this.transport = new Transport({ ...options, baseUrl });
    this.session = new Session(this.transport, options.credentials);
    this.log = (options.logger ?? pino({ level: 'silent' })).child({ component: 'groups-client' });
    this.retry = options.retry;
  }

  /** The service's base address the client calls (`https://host[:port]`). */
  get baseUrl(): string {
    return this.transport.baseUrl;
  }

  /** Logs in with the credentials' e-mail address and password; `token: true` also asks for an API token. */
  async login(options: { token?: boolean } = {}): Promise<User> {
    await this.session.login(options);
    return this.session.user!;
  }

  /**
   * Ends the session (`logout`, our extension, docs/protocol.md): its cookie, API token and csrf stop
   * working and its chat sockets close. Answers true when this call ended a session, false when there
   * was none (not logged in, expired, ended before): no error, since what logout is for is so either
   * way. Credentials with an e-mail address and password stay, so a later call logs in afresh; an API
   * token is dead for good.
   */
  async logout(): Promise<boolean> {
    if (!this.session.isLoggedIn) return false;
    let ended = true;
    try {
      // Not through run(): logging in again only to log out would be absurd. Retries for rate limits do apply.
      await withRetries(async () => {
        const csrf = await this.csrf();
        const response = await this.transport.send('logout', 'POST', { csrf }, this.session.headers());
        await this.transport.readJson('logout', response);
      }, { operation: 'logout', method: 'POST', log: this.log, options: this.retry });
    } catch (error) {
      if (!Session.isLoginLost(error)) throw error;
      ended = false;
    }
    this.session.forget();
    this.session.token = undefined;
    return ended;
  }

  /** The csrf token, fetched through an extended call when a token login never gave one. */
  async csrf(): Promise<string> {
    if (this.session.csrf === undefined) await this.refreshCsrf();
    return this.session.csrf!;
  }

  /**
   * Calls any operation by name. Parameters go as given (ids as the strings received); the result is
   * the parsed JSON with every id a string of its exact digits.
   */
  async call<T = unknown>(operation: string, params: WireParams = {}, files?: P.AttachmentInput[]): Promise<T> {
    if (!isOperation(operation)) throw new TypeError(`unknown operation ${operation}`);
    checkLimit(params.limit);
    const method = OPERATIONS[operation];
    return this.run(operation, method, () => this.once<T>(operation, method, params, files));
  }

  /**
   * Runs one exchange with what every call shares: retries with backoff for rate limits and server
   * errors, then (once each) a new login when the session is gone and a fresh csrf token when it was
   * refused.
   */
  async run<T>(operation: string, method: 'GET' | 'POST', attempt: () => Promise<T>, options: { retry?: boolean } = {}): Promise<T> {
    let relogged = false;
    let csrfRefreshed = false;
    for (;;) {
      let generation = this.session.generation;
      const once = async () => {
        // A lost session is replaced here, inside the retries, so the new login gets them too.
        if (!this.session.isLoggedIn && this.session.canLogIn) await this.session.login();
        generation = this.session.generation;
        try {
          const result = await attempt();
          this.calls.note(operation, 'ok');
          return result;
        } catch (error) {
          this.calls.noteFailure(operation, error);
          throw error;
        }
      };
      try {
        return await (options.retry === false ? once() : withRetries(once, { operation, method, log: this.log, options: this.retry }));
      } catch (error) {
        if (!relogged && Session.isLoginLost(error) && this.session.canLogIn) {
          relogged = true;
          // Another call may have logged in since this one was sent: then its session is already new.
          if (this.session.generation === generation) {
            this.log.debug({ operation, reason: (error as Error).message }, 'logging in again');
            this.session.forget();
          }
          continue;
        }
        if (!csrfRefreshed && error instanceof BadCsrfError && method === 'POST') {
          csrfRefreshed = true;
          this.log.debug({ operation }, 'refreshing the csrf token');
          await this.refreshCsrf();
          continue;
        }
        throw error;
      }
    }
  }

  private async once<T>(operation: OperationName, method: 'GET' | 'POST', params: WireParams, files?: P.AttachmentInput[]): Promise<T> {
    const wire: WireParams = { ...params };
    if (method === 'POST') wire.csrf = await this.csrf();
    const form = files ? multipart(wire, files) : undefined;
    const response = await this.transport.send(operation, method, form ? {} : wire, this.session.headers(), form);
    const result = await this.transport.readJson(operation, response);
    return normalizeLists(result) as T;
  }

  /** Fetches the csrf token; concurrent callers share one fetch. */
  private refreshCsrf(): Promise<void> {
    this.pendingCsrf ??= (async () => {
      // Any extended answer carries the user object with its csrf_token; getdrafts needs no group.
      const [, user] = await this.withoutCsrf<[unknown, User]>('getdrafts', { limit: 1, extended: true });
      this.session.csrf = String(user.csrf_token);
      this.session.user = user;
    })().finally(() => {
      this.pendingCsrf = undefined;
    });
    return this.pendingCsrf;
  }

  private async withoutCsrf<T>(operation: OperationName, params: WireParams): Promise<T> {
    return this.run(operation, 'GET', async () => {
      const response = await this.transport.send(operation, 'GET', params, this.session.headers());
      return (await this.transport.readJson(operation, response)) as T;
    });
  }

  /** Every item of a list operation; `.pages()` gives whole pages. */
  paginate<T = unknown>(operation: string, params: WireParams = {}): Paginator<T> {
    // Pages are lists; an extended answer would be [list, user], so `extended` is not passed on.
    const { extended: _extended, ...rest } = params;
    return new Paginator<T>(operation, rest, (page) => this.call<List<T>>(operation, page));
  }

  /** The group's activity log, a page at a time (moderators: `view_activity`). */
  getActivityLog<Q extends P.GetActivityLogParams>(params: Q) {
    return this.call<Extended<Q, List<ActivityLogEntry>>>('getactivitylog', params);
  }
  // `= {}`: called with no parameters, the result is the plain list, not the extended union.
  /** A page of topics: of one group, or of all the caller's groups when none is named. */
  getTopics<Q extends P.GetTopicsParams = {}>(params: Q = {} as Q) {
    return this.call<Extended<Q, TopicList>>('gettopics', params);
  }
  /** A page of one topic's messages, with the topic and the group. */
  getTopic<Q extends P.GetTopicParams>(params: Q) {
    return this.call<Extended<Q, MessageList>>('gettopic', params);
  }
  /** A page of a group's messages, with the group and the caller's rights there. */
  getMessages<Q extends P.GetMessagesParams>(params: Q) {
    return this.call<Extended<Q, MessageList>>('getmessages', params);
  }
  /** Searches a group's messages; each hit carries the excerpt around the match. */
  searchArchives<Q extends P.SearchArchivesParams>(params: Q) {
    return this.call<Extended<Q, List<SearchHit>>>('searcharchives', params);
  }
  /** Makes a chat in a group (`manage_chats`); the caller owns it. */
  newChat<Q extends P.NewChatParams>(params: Q) {
    return this.call<Extended<Q, Chat>>('newchat', params);
  }
  /** Changes the subject or description of a chat the caller owns, or closes and reopens it. */
  updateChat<Q extends P.UpdateChatParams>(params: Q) {
    return this.call<Extended<Q, Chat>>('updatechat', params);
  }
  /** A page of a group's chats: the open ones, or the closed ones with `show_closed`. */
  getChats<Q extends P.GetChatsParams>(params: Q) {
    return this.call<Extended<Q, List<Chat>>>('getchats', params);
  }
  /** Deletes a chat the caller owns. */
  async deleteChat<Q extends P.ChatIdParams>(params: Q) {
    return this.call<Extended<Q, Success | undefined>>('deletechat', params);
  }
  /** Subscribes the caller to a chat: the chat_sub it answers opens the chat's socket (openChatSocket). */
  joinChat<Q extends P.ChatIdParams>(params: Q) {
    return this.call<Extended<Q, ChatSub>>('joinchat', params);
  }
  /** Ends the caller's chat_sub (by the chat_sub's id): no more messages of that chat. */
  leaveChat<Q extends P.LeaveChatParams>(params: Q) {
    return this.call<Extended<Q, Success | undefined>>('leavechat', params);
  }
  /** A page of a chat's past messages, from `start_msg_num` on when given. */
  getChatHistory<Q extends P.GetChatHistoryParams>(params: Q) {
    return this.call<Extended<Q, List<ChatMessage>>>('getchathistory', params);
  }
  /** Starts a draft: a new topic's first post, or a reply to a message. */
  newDraft<Q extends P.NewDraftParams>(params: Q) {
    return this.call<Extended<Q, Draft>>('newdraft', params);
  }
  /** Saves changed fields of a draft. */
  updateDraft<Q extends P.UpdateDraftParams>(params: Q) {
    return this.call<Extended<Q, Draft>>('updatedraft', params);
  }
  /** Attaches files to a draft (multipart upload); at least one file. */
  addAttachments<Q extends P.DraftIdParams>(params: Q, files: P.AttachmentInput[]) {
    if (files.length === 0) throw new RangeError('addAttachments needs at least one file');
    return this.call<Extended<Q, Draft>>('addattachments', params, files);
  }
  /** Sends a draft: it becomes a message of the group (or waits for moderation). */
  postDraft<Q extends P.DraftIdParams>(params: Q) {
    return this.call<Extended<Q, Message>>('postdraft', params);
  }
  /** A page of the caller's drafts, in one group or in all. */
  getDrafts<Q extends P.GetDraftsParams = {}>(params: Q = {} as Q) {
    return this.call<Extended<Q, List<Draft>>>('getdrafts', params);
  }
  /** Throws a draft away unsent. */
  deleteDraft<Q extends P.DraftIdParams>(params: Q) {
    return this.call<Extended<Q, Success | undefined>>('deletedraft', params);
  }


  // Our extensions (docs/protocol.md "Extensions"): the calls public clients make first.
  /** The caller's subscriptions, each with its group's name and the caller's perms there. */
  getSubs<Q extends P.GetSubsParams = {}>(params: Q = {} as Q) {
    return this.call<Extended<Q, List<GroupSubscription>>>('getsubs', params);
  }
  /** One group the caller can see, with its settings (docs/protocol.md "Groups"). */
  getGroup<Q extends P.GetGroupParams>(params: Q) {
    return this.call<Extended<Q, Group>>('getgroup', params);
  }
  /** One message by `message_id`, or by group and `msg_num`. */
  getMessage<Q extends P.GetMessageParams>(params: Q) {
    return this.call<Extended<Q, Message>>('getmessage', params);
  }
  /** A page of a group's members: all, moderators, banned, pending or bouncing (`type`). */
  getMembers<Q extends P.GetMembersParams>(params: Q) {
    return this.call<Extended<Q, List<MemberInfo>>>('getmembers', params);
  }
  /** Members whose name (or, for moderators, address) contains `q`. */
  searchMembers<Q extends P.SearchMembersParams>(params: Q) {
    return this.call<Extended<Q, List<MemberInfo>>>('searchmembers', params);
  }
  /** A page of a group's subgroups the caller can see. */
  getSubgroups<Q extends P.GroupListParams>(params: Q) {
    return this.call<Extended<Q, List<Group>>>('getsubgroups', params);
  }
  /** A page of a group's databases. */
  getDatabases<Q extends P.GroupListParams>(params: Q) {
    return this.call<Extended<Q, List<Database>>>('getdatabases', params);
  }

  /** Streams the group's archive (a zip holding `messages.mbox`) to a file; see readArchive() for its messages. */
  downloadArchives(params: P.DownloadArchivesParams, options: DownloadOptions): Promise<DownloadResult> {
    return downloadArchiveToFile(this, params, options);
  }

  /**
   * Opens an attachment's `download_url` with this client's session, streamed; only a URL of the
   * service's own origin is fetched (ForeignDownloadError otherwise: the session goes nowhere else).
   */
  openAttachment(downloadUrl: string, options: { signal?: AbortSignal } = {}): Promise<Readable> {
    return openAttachment(this, downloadUrl, options.signal);
  }

  /** Opens the `chatdata` websocket of a chat_sub; a refused upgrade rejects with the matching error class. */
  async openChatSocket(options: ChatSocketOptions): Promise<WebSocket> {
    // A lost session or csrf is mended once, as for any call; refusals are otherwise the caller's to
    // handle (the supervisor has its own backoff), so no retries here.
    return this.run('chatdata', 'POST', () => openChatSocket(this, options), { retry: false });
  }

  /** Headers that authenticate a request of this client (for the websocket and downloads). */
  authHeaders(): Record<string, string> {
    return this.session.headers();
  }

  /** Closes the client's connections (its HTTP pool); the client is not to be used after. */
  async close(): Promise<void> {
    await this.transport.close();
  }
}

export { GroupsError };
