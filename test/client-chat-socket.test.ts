import type { TLSSocket } from 'node:tls';
import type WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BadRequestError, ExpiredError, RateLimitError, ServerError, type Chat, type GroupsClient } from '../src/api/index.js';
import { Clients, closeSocket, collectFrames } from './helpers/client.js';
import { admin, startTestService, type TestService } from './helpers/service.js';

const HISTORY = ['Welcome to #general!', 'Hi all', 'Hello from Tokyo'];

describe('openChatSocket', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  const sockets: WebSocket[] = [];
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterEach(async () => {
    await Promise.all(sockets.splice(0).map(closeSocket));
    await admin(svc, 'faults/clear');
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
  });

  async function chatOf(client: GroupsClient, subject: string, showClosed = false): Promise<Chat> {
    const chats = await client.getChats({ group_name: 'demo', show_closed: showClosed, limit: 100 });
    const chat = chats.data.find((c) => c.subject === subject);
    if (!chat?.chat_sub) throw new Error(`no chat_sub of ${subject}`);
    return chat;
  }

  async function open(client: GroupsClient, chatsubId: string, noHistory?: boolean) {
    const ws = await client.openChatSocket({ chatsubId, noHistory });
    sockets.push(ws);
    return { ws, frames: collectFrames(ws) };
  }

  it('opens with cookie auth: the history, oldest first, then live messages', async () => {
    const bob = clients.make('bob');
    const general = await chatOf(bob, 'general');
    const { ws, frames } = await open(bob, general.chat_sub!.id);
    expect(ws.readyState).toBe(ws.OPEN);
    const history = await frames.waitFor(3);
    expect(history.map((frame) => frame.message)).toEqual(HISTORY);
    expect(history.every((frame) => frame.object === 'chat_message' && frame.chat_id === general.id)).toBe(true);
    await admin(svc, 'chats/messages', { chat: general.id, user: 'carol@example.com', message: 'live for bob' });
    const [, , , live] = await frames.waitFor(4);
    expect(live).toMatchObject({ object: 'chat_message', message: 'live for bob', msg_num: 4 });
  });

  it('noHistory skips the history: the first frame is the next live message', async () => {
    const carol = clients.make('carol');
    const random = await chatOf(carol, 'random');
    const { frames } = await open(carol, random.chat_sub!.id, true);
    await admin(svc, 'chats/messages', { chat: random.id, user: 'alice@example.com', message: 'only this' });
    const [first] = await frames.waitFor(1);
    expect(first).toMatchObject({ message: 'only this' });
  });

  it.each(['basic', 'bearer'] as const)('opens with %s token auth (the csrf fetched first)', async (scheme) => {
    const { client, csrf } = await clients.withToken('alice', scheme);
    const general = await chatOf(client, 'general');
    expect(client.session.csrf).toBeUndefined();
    const { frames } = await open(client, general.chat_sub!.id);
    expect(client.session.csrf).toBe(csrf);
    expect((await frames.waitFor(3)).map((frame) => frame.message)).toEqual(HISTORY);
  });

  it('checks the service\'s certificate: a client that does not trust its CA cannot open a socket', async () => {
    const { client: trusting, csrf } = await clients.withToken('bob', 'bearer');
    const general = await chatOf(trusting, 'general');
    const untrusting = (await clients.withToken('bob', 'bearer', { ca: undefined })).client;
    untrusting.session.csrf = csrf; // so the refusal comes from the socket's own handshake, not a csrf fetch
    const error: Error = await untrusting.openChatSocket({ chatsubId: general.chat_sub!.id }).catch((e) => e);
    expect(error).toBeInstanceOf(Error);
    expect(`${(error as { code?: string }).code} ${error.message}`).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|CERT|certificate/i);
    // The trusting client opens many sockets on its one TLS context.
    const { frames } = await open(trusting, general.chat_sub!.id);
    await open(trusting, general.chat_sub!.id);
    expect(await frames.waitFor(3)).toHaveLength(3);
  });

  it('a client\'s later sockets resume the TLS session of an earlier verified one', async () => {
    const bob = clients.make('bob');
    const general = await chatOf(bob, 'general');
    const first = await open(bob, general.chat_sub!.id);
    await first.frames.waitFor(3); // the session ticket comes after the handshake
    const second = await open(bob, general.chat_sub!.id);
    const tlsOf = (ws: WebSocket) => (ws as unknown as { _socket: TLSSocket })._socket;
    expect(tlsOf(first.ws).isSessionReused()).toBe(false);
    expect(tlsOf(second.ws).isSessionReused()).toBe(true);
    expect(tlsOf(second.ws).authorized).toBe(true);
  });

  it('a closed chat is BadRequestError "closed chat"', async () => {
    const bob = clients.make('bob');
    const archive = await chatOf(bob, 'archive', true);
    expect(archive.is_closed).toBe(true);
    const error = await bob.openChatSocket({ chatsubId: archive.chat_sub!.id }).catch((e) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ type: 'bad_request', extra: 'closed chat', status: 400, operation: 'chatdata' });
  });

  it('an unknown or someone else\'s chat_sub is BadRequestError "invalid chatsub_id"', async () => {
    const bob = clients.make('bob');
    const carol = clients.make('carol');
    const carols = await chatOf(carol, 'random');
    for (const chatsubId of ['no-such-sub', carols.chat_sub!.id]) {
      const error = await bob.openChatSocket({ chatsubId }).catch((e) => e);
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error).toMatchObject({ extra: 'invalid chatsub_id', status: 400, operation: 'chatdata' });
    }
  });

  it('an upgrade over the rate limit is RateLimitError with retryAfterSeconds', async () => {
    const bob = clients.make('bob');
    const general = await chatOf(bob, 'general');
    await admin(svc, 'faults/errors', { count: 1, type: 'rate_limit', scope: 'upgrade', retry_after: 3 });
    const error = await bob.openChatSocket({ chatsubId: general.chat_sub!.id }).catch((e) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ type: 'rate_limit', status: 429, operation: 'chatdata', retryAfterSeconds: 3 });
    // The fault is used up: the next upgrade opens.
    const { frames } = await open(bob, general.chat_sub!.id);
    expect(await frames.waitFor(3)).toHaveLength(3);
  });

  it('refused upgrades are ServerError with Retry-After', async () => {
    const bob = clients.make('bob');
    const general = await chatOf(bob, 'general');
    await admin(svc, 'faults/refuse-upgrades', { seconds: 30 });
    const error = await bob.openChatSocket({ chatsubId: general.chat_sub!.id }).catch((e) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ type: 'server', status: 503, operation: 'chatdata' });
    expect(error.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('after expire-sessions a token client\'s upgrade is ExpiredError', async () => {
    const { client } = await clients.withToken('carol', 'bearer');
    const random = await chatOf(client, 'random');
    const { frames } = await open(client, random.chat_sub!.id);
    await frames.waitFor(1);
    const fresh = (await clients.withToken('bob')).client;
    const general = await chatOf(fresh, 'general');
    await admin(svc, 'faults/expire-sessions');
    const error = await client.openChatSocket({ chatsubId: random.chat_sub!.id }).catch((e) => e);
    expect(error).toBeInstanceOf(ExpiredError);
    expect(error).toMatchObject({ type: 'expired', status: 400, operation: 'chatdata' });
    // Without a csrf yet, the csrf fetch is what finds the token expired.
    await expect(fresh.openChatSocket({ chatsubId: general.chat_sub!.id })).rejects.toBeInstanceOf(ExpiredError);
  });

  // Like every API call, the socket opener logs in again once when the session expired.
  it('an e-mail/password client logs in again to open a socket after expiry', async () => {
    const mo = clients.make('mo');
    const general = await chatOf(mo, 'general');
    await admin(svc, 'faults/expire-sessions');
    const { frames } = await open(mo, general.chat_sub!.id);
    expect(await frames.waitFor(3)).toHaveLength(3);
  });
});
