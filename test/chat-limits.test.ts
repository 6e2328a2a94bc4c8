import { PassThrough } from 'node:stream';
import { SOCKET_CAPS, SocketPlaces } from '../src/service/socket-places.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ChatSocket, expectRefused, openChat, pollUntil } from './helpers/chat-socket.js';
import {
  admin, call, EMAILS, expectError, loginAs, ok, type DemoUser, type Session, type TestService, startTestService,
} from './helpers/service.js';

/**
 * Chat sockets within the limits (#15 item 4): posts over a socket are limited per caller (the key of
 * callerKey, so neither another socket nor another login gives a fresh allowance), in an allowance of
 * their own with the numbers of --rate-limit, and a refused post is answered with the error object on the
 * socket; the sockets one user holds open are capped (docs/protocol.md "Rate limits"); a session that
 * ends takes its sockets.
 */

/** docs/protocol.md: at most this many open chat sockets on one chat_sub (and 12,000 per user in all). */
const SOCKETS_PER_SUB = SOCKET_CAPS.perChatSub;

let counter = 0;
const unique = (label: string): string => `${label} ${++counter}`;

const opened: ChatSocket[] = [];
afterEach(() => {
  for (const socket of opened.splice(0)) socket.close();
});

/** A chat of the demo group owned by `owner` (so the answer's chat_sub is the owner's), made through the admin API. */
async function ownChat(svc: TestService, owner: DemoUser, members: DemoUser[] = []): Promise<{ chatId: string; subId: string }> {
  const chat = ok(await admin(svc, 'chats', {
    group: 'demo', owner: EMAILS[owner], subject: unique('limits chat'), desc: 'd', members: members.map((m) => EMAILS[m]),
  }));
  return { chatId: String(chat.id), subId: String(chat.chat_sub.id) };
}

async function connect(svc: TestService, session: Session, subId: string): Promise<ChatSocket> {
  const socket = await openChat(svc, session, subId, { no_history: 'true' });
  opened.push(socket);
  return socket;
}

async function storedTexts(svc: TestService, chatId: string, reader: Session): Promise<string[]> {
  return ok(await call(svc, 'getchathistory', { chat_id: chatId, limit: 100, sort_dir: 'asc' }, { auth: reader })).data
    .map((m: any) => m.message as string);
}

describe('chat posts are limited per caller', () => {
  let svc: TestService;
  let alice: Session;

  beforeAll(async () => {
    // Nearly no refill (one request per 1000 s): every count below is exact whatever the machine's speed.
    svc = await startTestService({ rateLimit: { perSecond: 0.001, burst: 20 } });
    alice = await loginAs(svc, 'alice');
  });
  afterAll(async () => svc?.close());

  it('posts beyond the allowance are answered rate_limit on the socket, in order, and not stored; the socket stays open', async () => {
    const bob = await loginAs(svc, 'bob');
    const { chatId, subId } = await ownChat(svc, 'bob');
    const socket = await connect(svc, bob, subId);
    const sent = 40;
    for (let n = 1; n <= sent; n += 1) socket.post(`flood ${n}`);
    // Each post is answered (an error frame) or stored; wait until all 40 are one or the other.
    const errors = () => socket.frames.filter((f) => f?.object === 'error');
    const stored = await pollUntil(async () => {
      const texts = await storedTexts(svc, chatId, alice);
      return texts.length + errors().length === sent ? texts : undefined;
    }, 'every post stored or refused');
    expect(stored).toEqual(Array.from({ length: 20 }, (_, i) => `flood ${i + 1}`));
    expect(errors().length).toBe(sent - 20);
    for (const frame of errors()) expect(frame).toMatchObject({ object: 'error', type: 'rate_limit' });
    expect(errors()[0].extra).toMatch(/^too many requests; retry after \d+ s$/);
    expect(socket.isOpen).toBe(true);
    // An allowance of its own (docs/protocol.md "Rate limits"): REST calls go on.
    ok(await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob }));
  });

  it('is the caller\'s, not the socket\'s or the session\'s: another socket of another login finds it spent', async () => {
    const [first, second] = [await loginAs(svc, 'carol'), await loginAs(svc, 'carol')];
    const { chatId, subId } = await ownChat(svc, 'carol');
    const spender = await connect(svc, first, subId);
    for (let n = 1; n <= 20; n += 1) spender.post(`spent ${n}`);
    await pollUntil(async () => ((await storedTexts(svc, chatId, alice)).length === 20 ? true : undefined), 'the allowance spent');
    const other = await connect(svc, second, subId);
    other.post('one more, elsewhere');
    const refusal = await other.waitForFrame((f) => f?.object === 'error', 'the refusal');
    expect(refusal).toMatchObject({ object: 'error', type: 'rate_limit' });
    expect((await storedTexts(svc, chatId, alice)).length).toBe(20);
  });
});

describe('chat sockets per user', () => {
  let svc: TestService;
  const s = {} as Record<DemoUser, Session>;

  beforeAll(async () => {
    svc = await startTestService();
    for (const who of ['bob', 'carol'] as const) s[who] = await loginAs(svc, who);
  });
  afterAll(async () => svc?.close());

  it(`holds at most ${SOCKETS_PER_SUB} open sockets on one chat_sub (all sessions of the user together); the next upgrade is refused with the error object`, async () => {
    const { chatId, subId } = await ownChat(svc, 'bob', ['carol']);
    const token = ok(await admin(svc, 'tokens', { user: EMAILS.bob }));
    const tokenAuth = { bearer: String(token.token) };
    // Half on the cookie session, half on a token session of the same user.
    for (let n = 0; n < SOCKETS_PER_SUB / 2; n += 1) opened.push(await openChat(svc, s.bob, subId, { no_history: 'true' }));
    const bobSocketsByToken: ChatSocket[] = [];
    for (let n = 0; n < SOCKETS_PER_SUB / 2; n += 1) {
      const outcome = await expectOpen(svc, { chatsub_id: subId, csrf: String(token.csrf), no_history: 'true' }, tokenAuth);
      bobSocketsByToken.push(outcome);
    }
    const refused = await expectRefused(svc, { chatsub_id: subId, csrf: s.bob.csrf, no_history: 'true' }, s.bob);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ object: 'error', type: 'rate_limit' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(bobSocketsByToken.every((socket) => socket.isOpen)).toBe(true);

    // Another user of the same chat is not affected.
    const carolSub = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: s.carol })).data
      .find((c: any) => String(c.id) === chatId).chat_sub.id;
    opened.push(await openChat(svc, s.carol, String(carolSub), { no_history: 'true' }));

    // A closed socket frees its place.
    const first = bobSocketsByToken.shift()!;
    const closed = first.waitForClose();
    first.ws.close(1000);
    await closed;
    const again = await pollUntil(
      () => tryOpen(svc, { chatsub_id: subId, csrf: s.bob.csrf, no_history: 'true' }, s.bob), 'a place freed by the closed socket',
    );
    expect(again.isOpen).toBe(true);
    opened.push(again, ...bobSocketsByToken);
  });
});

describe('the cap on a user\'s sockets in all', () => {
  it('counts every chat_sub of the user together, and frees a place when a socket closes', () => {
    const places = new SocketPlaces({ perChatSub: 2, perUser: 3 });
    const sockets = Array.from({ length: 4 }, () => new PassThrough());
    places.take('u1', 'sub-a', sockets[0]!);
    places.take('u1', 'sub-b', sockets[1]!);
    places.take('u1', 'sub-c', sockets[2]!);
    expect(() => places.take('u1', 'sub-d', sockets[3]!)).toThrow(/at most 3 per user/);
    // Another user is counted apart.
    places.take('u2', 'sub-e', new PassThrough());
    sockets[0]!.destroy();
    return new Promise<void>((done) => setImmediate(() => {
      expect(places.heldBy('u1')).toBe(2);
      places.take('u1', 'sub-d', sockets[3]!);
      expect(places.heldBy('u1')).toBe(3);
      done();
    }));
  });

  it('is far above what a bot needs: one socket per chat, 10,000 chats in one supervisor', () => {
    expect(SOCKET_CAPS.perUser).toBeGreaterThanOrEqual(10_000);
  });
});

describe('a session that ends takes its sockets', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => svc?.close());

  it('closes the ended session\'s sockets with 4004 and leaves the user\'s other sessions open', async () => {
    const [first, second] = [await loginAs(svc, 'bob'), await loginAs(svc, 'bob')];
    const { subId } = await ownChat(svc, 'bob');
    const ending = await connect(svc, first, subId);
    const staying = await connect(svc, second, subId);
    const cookie = /groupsio=([^;]+)/.exec(first.cookie)![1]!;
    const core = svc.service.core;
    core.auth.endSession(core.store.sessionsByCookie.get(cookie)!);
    expect((await ending.waitForClose()).code).toBe(4004);
    expect(staying.isOpen).toBe(true);
  });
});

async function tryOpen(svc: TestService, query: Record<string, string>, auth: Session | { bearer: string }): Promise<ChatSocket | undefined> {
  const socket = new ChatSocket(svc, query, auth);
  const outcome = await socket.outcome;
  if (outcome.kind === 'open') return socket;
  socket.close();
  return undefined;
}

async function expectOpen(svc: TestService, query: Record<string, string>, auth: Session | { bearer: string }): Promise<ChatSocket> {
  const socket = await tryOpen(svc, query, auth);
  if (!socket) throw new Error('expected the socket to open');
  return socket;
}
