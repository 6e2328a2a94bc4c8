import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { CLOSE } from '../api/close-codes.js';
import type { Caller } from './auth.js';
import { CHAT_MSG_CLOSED, MAX_CHAT_MESSAGE_LENGTH, postChatMessage } from './chat-messages.js';
import { checkChatUpgrade, type Accepted } from './chat-upgrade.js';
import type { ServiceCore } from './core.js';
import { ApiError, badRequest, invalidValue, rateLimited } from './errors.js';
import { toWireJson } from './json.js';
import type { Chat, ChatMessage, ChatSub } from './model.js';
import { refuseUpgrade } from './refuse-upgrade.js';
import { SocketPlaces } from './socket-places.js';
import { cleanChatMessage } from './text-rules.js';
import { canSeeChat, visibleChat } from './visibility.js';

// Where the service's other upgrade paths (local-service.ts) have long imported it from.
export { refuseUpgrade };

/** Close codes the local service uses on chat sockets (our decision, docs/protocol.md). */
export const CLOSE_CODES = CLOSE;

/** Messages sent on connect unless `no_history` (spec 4.3). */
export const HISTORY_ON_CONNECT = 50;
/** A socket whose unsent data grows past this is cut; its client reconnects and fills in from history. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

interface Connection {
  ws: WebSocket;
  chatId: string;
  subId: string;
  userId: string;
  caller: Caller;
  sessionId: string;
  /** The per-caller limit key of the upgrade (callerKey): all the caller's sockets share one allowance for posts. */
  limitKey: string;
  alive: boolean;
}

/** The `chatdata` websockets: upgrade checks, history on connect, fan-out, ping watchdog. */
export class ChatHub {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 256 * 1024, perMessageDeflate: false });
  private readonly byChat = new Map<string, Set<Connection>>();
  /** The sockets each user holds, capped (socket-places.ts). */
  private readonly places = new SocketPlaces();
  private readonly pingTimer: NodeJS.Timeout;
  private readonly stopListening: () => void;
  readonly stats = { accepted: 0, refused: 0, malformedFrames: 0, rateLimitedPosts: 0, delivered: 0 };

  constructor(
    private readonly core: ServiceCore,
    private readonly log: Logger,
    pingIntervalMs: number,
  ) {
    core.events.on('chat-message', (message, chat) => this.broadcast(message, chat));
    core.events.on('chat-closed', (chat) => this.closeChat(chat.id, CLOSE_CODES.chatClosed, 'closed chat'));
    core.events.on('chat-deleted', (chat) => this.closeChat(chat.id, CLOSE_CODES.chatDeleted, 'chat deleted'));
    core.events.on('chat-sub-removed', (sub) => this.closeSub(sub, CLOSE_CODES.chatSubRemoved, 'left chat'));
    core.events.on('member-lost', (groupId, userId) => this.closeMember(groupId, userId));
    this.stopListening = core.auth.onSessionEnded((session) => this.closeSession(session.id));
    this.pingTimer = setInterval(() => this.pingAll(), pingIntervalMs);
    this.pingTimer.unref();
  }

  get openSockets(): number {
    let count = 0;
    for (const set of this.byChat.values()) count += set.size;
    return count;
  }

  /** Handles an HTTP upgrade for `/api/v1/chatdata`; a refused one is answered with an error object. */
  /** Resolves true when the upgrade is granted (the socket is the hub's from then on), false when refused. */
  async handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<boolean> {
    let accepted: Accepted;
    try {
      accepted = await checkChatUpgrade(this.core, request, url);
      this.places.take(accepted.caller.user.id, accepted.sub.id, socket);
    } catch (error) {
      this.stats.refused += 1;
      const apiError = error instanceof ApiError ? error : new ApiError('server', 'upgrade failed');
      if (!(error instanceof ApiError)) this.log.error({ err: error }, 'chatdata upgrade failed');
      refuseUpgrade(socket, apiError);
      return false;
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => this.accept(ws, accepted));
    return true;
  }

  private accept(ws: WebSocket, accepted: Accepted): void {
    const { sub, withHistory } = accepted;
    // Checked again: the chat may have closed while the handshake was on the wire.
    const chat = this.core.store.chats.get(sub.chatId);
    if (!chat || !this.core.store.chatSubs.has(sub.id)) {
      ws.close(CLOSE_CODES.chatDeleted, 'chat deleted');
      return;
    }
    if (chat.isClosed) {
      ws.close(CLOSE_CODES.chatClosed, 'closed chat');
      return;
    }
    const connection: Connection = {
      ws, chatId: chat.id, subId: sub.id, userId: sub.userId, caller: accepted.caller, sessionId: accepted.caller.session.id,
      limitKey: accepted.limitKey, alive: true,
    };
    // History and registration happen in the same tick, so no post falls between them.
    if (withHistory) {
      const history = this.core.store.chatMessages.get(chat.id) ?? [];
      for (const message of history.slice(-HISTORY_ON_CONNECT)) this.sendMessage(connection, this.encode(message));
      this.markSeen(sub, history.at(-1)?.msgNum ?? 0);
    }
    let set = this.byChat.get(chat.id);
    if (!set) this.byChat.set(chat.id, (set = new Set()));
    set.add(connection);
    this.stats.accepted += 1;
    ws.on('pong', () => {
      connection.alive = true;
    });
    ws.on('message', (data, isBinary) => this.onFrame(connection, data, isBinary));
    ws.on('close', () => {
      set.delete(connection);
      if (set.size === 0 && this.byChat.get(chat.id) === set) this.byChat.delete(chat.id);
    });
    ws.on('error', (error) => this.log.debug({ err: error, chatId: chat.id }, 'chat socket error'));
  }

  private onFrame(connection: Connection, data: RawData, isBinary: boolean): void {
    const problem = this.post(connection, data, isBinary);
    if (problem) {
      if (problem.type === 'rate_limit') this.stats.rateLimitedPosts += 1;
      else this.stats.malformedFrames += 1;
      this.sendMessage(connection, Buffer.from(toWireJson(problem.toBody(), this.core.store.idStyle)));
    }
  }

  /** Handles one chat post object; answers the problem, if any, for the client's socket. */
  private post(connection: Connection, data: RawData, isBinary: boolean): ApiError | undefined {
    // Every frame counts (refused ones included), under the caller's key, in an allowance of its own with
    // the numbers of --rate-limit: shared with REST, a bot's history reads starved its own posts, and a
    // post refused on the socket is not sent again by clients until they reconnect.
    const wait = this.core.limiter.take(`chat posts ${connection.limitKey}`);
    if (wait > 0) return rateLimited(wait, `too many requests; retry after ${Math.max(1, Math.ceil(wait))} s`);
    if (isBinary) return badRequest('chat post must be a text frame');
    let frame: unknown;
    try {
      frame = JSON.parse(data.toString());
    } catch {
      return badRequest('chat post is not valid JSON');
    }
    if (typeof frame !== 'object' || frame === null || (frame as { object?: unknown }).object !== 'chat_post') {
      return badRequest('expected a chat_post object');
    }
    const text = (frame as { message?: unknown }).message;
    if (typeof text !== 'string' || text.trim() === '' || text.length > MAX_CHAT_MESSAGE_LENGTH) {
      return invalidValue('message');
    }
    // The text rules of a multi-line field (text-rules.ts): no parameter carries a post, so they apply here.
    const clean = cleanChatMessage(text);
    if (!clean) return invalidValue('message');
    const chat = this.core.store.chats.get(connection.chatId);
    const user = this.core.store.users.get(connection.userId);
    if (!chat || !user || !this.core.store.chatSubs.has(connection.subId)) return badRequest('invalid chatsub_id');
    try {
      visibleChat(this.core, chat, connection.caller, 'invalid chatsub_id');
    } catch (error) {
      if (error instanceof ApiError) return error;
      throw error;
    }
    if (chat.isClosed) return badRequest('closed chat');
    postChatMessage(this.core, chat, user, clean);
    return undefined;
  }

  private encode(message: ChatMessage): Buffer {
    return Buffer.from(toWireJson(this.core.present.chatMessage(message), this.core.store.idStyle));
  }

  /** Each member receives the posts of the others (spec 4.3); the closing notice goes to everyone. */
  private broadcast(message: ChatMessage, chat: Chat): void {
    const set = this.byChat.get(chat.id);
    if (!set || set.size === 0) return;
    const frame = this.encode(message);
    const everyone = message.type === CHAT_MSG_CLOSED;
    // Delivering is a chat operation too: a member who no longer sees the chat (a lost moderator role in
    // a chat_access limited group) is closed rather than sent to. One check per user per message.
    const sees = new Map<string, boolean>();
    for (const connection of set) {
      let allowed = sees.get(connection.userId);
      if (allowed === undefined) sees.set(connection.userId, (allowed = canSeeChat(this.core, chat, connection.userId)));
      if (!allowed) {
        connection.ws.close(CLOSE_CODES.notMember, 'cannot see the chat');
        continue;
      }
      if (!everyone && connection.userId === message.userId) continue;
      this.sendMessage(connection, frame);
      const sub = this.core.store.chatSubs.get(connection.subId);
      if (sub) this.markSeen(sub, message.msgNum);
    }
  }

  private sendMessage(connection: Connection, frame: Buffer): void {
    const { ws } = connection;
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.log.warn({ chatId: connection.chatId }, 'chat socket too slow; closing it');
      ws.close(CLOSE_CODES.slowConsumer, 'too slow');
      return;
    }
    ws.send(frame, { binary: false });
    this.stats.delivered += 1;
  }

  private markSeen(sub: ChatSub, msgNum: number): void {
    if (msgNum > sub.lastMsgSeen) {
      sub.lastMsgSeen = msgNum;
      sub.updated = this.core.now();
    }
  }

  private closeChat(chatId: string, code: number, reason: string): void {
    for (const connection of this.byChat.get(chatId) ?? []) connection.ws.close(code, reason);
  }

  private closeSub(sub: ChatSub, code: number, reason: string): void {
    for (const connection of this.byChat.get(sub.chatId) ?? []) {
      if (connection.subId === sub.id) connection.ws.close(code, reason);
    }
  }

  /** A session that ended (logout) takes its sockets; the user's other sessions keep theirs. */
  private closeSession(sessionId: string): void {
    for (const set of this.byChat.values()) {
      for (const connection of set) {
        if (connection.sessionId === sessionId) connection.ws.close(CLOSE_CODES.sessionEnded, 'session ended');
      }
    }
  }

  /** A member banned or removed from the group loses the chat streams of that group. */
  private closeMember(groupId: string, userId: string): void {
    for (const set of this.byChat.values()) {
      for (const connection of set) {
        const chat = this.core.store.chats.get(connection.chatId);
        if (connection.userId === userId && chat?.groupId === groupId) connection.ws.close(CLOSE_CODES.notMember, 'not a member');
      }
    }
  }

  private pingAll(): void {
    for (const set of this.byChat.values()) {
      for (const connection of set) {
        if (!connection.alive) {
          // No answer to the last ping: the peer is most likely gone, so no close handshake is tried.
          connection.ws.terminate();
          continue;
        }
        connection.alive = false;
        connection.ws.ping();
      }
    }
  }

  /** Fault injection: cut sockets (all, one chat's or one group's) without a close frame, as a network failure would. */
  dropSockets(filter: { chatId?: string; groupId?: string } = {}): number {
    let count = 0;
    for (const [id, set] of this.byChat) {
      if (filter.chatId !== undefined && id !== filter.chatId) continue;
      if (filter.groupId !== undefined && this.core.store.chats.get(id)?.groupId !== filter.groupId) continue;
      for (const connection of set) {
        connection.ws.terminate();
        count += 1;
      }
    }
    return count;
  }

  closeAll(code: number, reason: string): void {
    for (const set of this.byChat.values()) for (const connection of set) connection.ws.close(code, reason);
  }

  stop(): void {
    clearInterval(this.pingTimer);
    this.stopListening();
    this.dropSockets();
    this.wss.close();
  }
}
