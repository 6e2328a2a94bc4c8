import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ChatSocket, expectRefused, openChat, pollUntil, tryChatdata, type ChatdataAuth, type ChatdataQuery, type RefusedUpgrade,
} from './helpers/chat-socket.js';
import {
  admin, call, EMAILS, login, loginAs, ok, send, startTestService, type ApiResponse, type DemoUser, type Session, type TestService,
} from './helpers/service.js';

/**
 * The `chatdata` websocket of spec 4.3 against the local service over WSS: history on connect,
 * fan-out to the other members, chat post frames, refused upgrades, the close codes of the local
 * service (4000 closed, 4001 deleted, 4002 left, 1006 for an abrupt drop) and the admin API's faults.
 */

type Who = DemoUser;

let counter = 0;
const unique = (label: string): string => `${label} ${++counter}`;


function expectRefusal(refused: RefusedUpgrade, status: number, type: string, extra?: string): void {
  const matches = refused.status === status && refused.body?.object === 'error' && refused.body?.type === type &&
    (extra === undefined || refused.body?.extra === extra);
  if (!matches) throw new Error(`expected a refusal ${status} ${type} ${extra ?? ''}, got ${refused.status} ${refused.text}`);
  expect(String(refused.headers['content-type'])).toContain('application/json');
}

/** Every socket a test opens, closed after it so no test leaks into the next. */
const opened: ChatSocket[] = [];
function track(socket: ChatSocket): ChatSocket {
  opened.push(socket);
  return socket;
}

describe('chatdata websocket', () => {
  let svc: TestService;
  const s = {} as Record<Who, Session>;

  async function connect(session: Session, chatsubId: unknown, extra: ChatdataQuery = {}): Promise<ChatSocket> {
    return track(await openChat(svc, session, String(chatsubId), extra));
  }

  async function refused(query: ChatdataQuery, auth: ChatdataAuth, headers: Record<string, string> = {}): Promise<RefusedUpgrade> {
    return expectRefused(svc, query, auth, { headers });
  }

  /** A new chat owned by `owner` that `members` joined through joinchat; answers each one's chat_sub id. */
  async function newChat(owner: Who, members: string[] = [], sessions: Record<string, Session> = s): Promise<{ chat: any; subs: Record<string, string> }> {
    const chat = ok(await admin(svc, 'chats', { group: 'demo', owner: EMAILS[owner as Who] ?? owner, subject: unique('stream chat'), desc: 'd' }));
    const subs: Record<string, string> = { [owner]: String(chat.chat_sub.id) };
    for (const member of members) {
      const sub = ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: sessions[member] }));
      subs[member] = String(sub.id);
    }
    return { chat, subs };
  }

  async function adminPost(chatId: unknown, user: string, message: string, count = 1): Promise<any> {
    return ok(await admin(svc, 'chats/messages', { chat: String(chatId), user: EMAILS[user as Who] ?? user, message, count }));
  }

  async function history(chatId: unknown, auth: Session, params: Record<string, unknown> = {}): Promise<any[]> {
    return ok(await call(svc, 'getchathistory', { chat_id: chatId, limit: 100, ...params }, { auth })).data;
  }

  async function openSockets(): Promise<number> {
    const response = await send(svc, '/_admin/stats', 'GET', { authorization: `Bearer ${svc.service.adminToken}` });
    return ok(response).open_sockets as number;
  }

  beforeAll(async () => {
    svc = await startTestService();
    for (const who of Object.keys(EMAILS) as Who[]) s[who] = await loginAs(svc, who);
  });

  afterEach(() => {
    for (const socket of opened.splice(0)) socket.close();
  });

  afterAll(async () => {
    await svc?.close();
  });

  describe('history on connect', () => {
    it('sends the 50 most recent messages, oldest first, and nothing more', async () => {
      const { chat, subs } = await newChat('mo', ['bob']);
      await adminPost(chat.id, 'mo', 'history {n}', 60);
      const bob = await connect(s.bob, subs.bob);
      const frames = await bob.waitForFrames(50, '50 history frames');
      expect(frames.every((f) => f.object === 'chat_message' && f.chat_id === chat.id)).toBe(true);
      expect(frames.map((f) => f.msg_num)).toEqual(Array.from({ length: 50 }, (_, i) => i + 11));
      expect(frames.map((f) => f.message)).toEqual(Array.from({ length: 50 }, (_, i) => `history ${i + 11}`));
      expect(frames[0]).toMatchObject({
        user_id: s.mo.user.id, type: 'chat_msg_type_normal', display_name: 'Mo Moderator', user_name: 'mo', group_id: chat.group_id,
      });
      // The next frame is a new post, not a 51st history line.
      await adminPost(chat.id, 'carol', 'after history');
      await bob.waitForMessage('after history');
      expect(bob.frames.length).toBe(51);
      expect(bob.frames[50]).toMatchObject({ msg_num: 61, user_id: s.carol.user.id });
      expect(bob.binaryFrames).toBe(0);
    });

    it('sends the whole history when there are fewer than 50 messages', async () => {
      const general = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: s.carol })).data.find((c: any) => c.subject === 'general');
      const carol = await connect(s.carol, general.chat_sub.id);
      const frames = await carol.waitForFrames(3);
      expect(frames.map((f) => f.message)).toEqual(['Welcome to #general!', 'Hi all', 'Hello from Tokyo']);
      expect(frames.map((f) => f.msg_num)).toEqual([1, 2, 3]);
    });

    it('sends no history with no_history=true', async () => {
      const { chat, subs } = await newChat('mo', ['bob']);
      await adminPost(chat.id, 'mo', 'old {n}', 5);
      const bob = await connect(s.bob, subs.bob, { no_history: 'true' });
      await adminPost(chat.id, 'mo', 'fresh');
      await bob.waitForMessage('fresh');
      expect(bob.frames.map((f) => f.message)).toEqual(['fresh']);
      expect(bob.frames[0].msg_num).toBe(6);

      const withHistory = await connect(s.bob, subs.bob, { no_history: 'false' });
      const frames = await withHistory.waitForFrames(6);
      expect(frames.map((f) => f.msg_num)).toEqual([1, 2, 3, 4, 5, 6]);
    });

    it('refuses a no_history that is not a boolean', async () => {
      const { subs } = await newChat('mo', ['bob']);
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf, no_history: 'maybe' }, s.bob), 400, 'invalid_value', 'no_history');
    });
  });

  describe('posting and fan-out', () => {
    it('delivers a post to the other members, not to the poster, and stores it', async () => {
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      await adminPost(chat.id, 'mo', 'before {n}', 2);
      const bob = await connect(s.bob, subs.bob, { no_history: 'true' });
      const bobElsewhere = await connect(await loginAs(svc, 'bob'), subs.bob, { no_history: 'true' });
      const carol = await connect(s.carol, subs.carol, { no_history: 'true' });

      bob.post('hello from bob');
      const received = await carol.waitForMessage('hello from bob');
      expect(received).toMatchObject({
        object: 'chat_message', message: 'hello from bob', user_id: s.bob.user.id, chat_id: chat.id, group_id: chat.group_id,
        msg_num: 3, type: 'chat_msg_type_normal', display_name: 'Bob Member', user_name: 'bob',
      });
      expect(received.id).toBeDefined();

      // Carol answers; once Bob has her reply he has had every frame sent before it, and his own post was not among them.
      carol.post('reply from carol');
      const reply = await bob.waitForMessage('reply from carol');
      expect(reply).toMatchObject({ user_id: s.carol.user.id, msg_num: 4 });
      expect(bob.frames.map((f) => f.message)).toEqual(['reply from carol']);
      // Nor is it echoed to Bob's other socket (another login of his).
      await bobElsewhere.waitForMessage('reply from carol');
      expect(bobElsewhere.frames.map((f) => f.message)).toEqual(['reply from carol']);
      expect(carol.frames.map((f) => f.message)).toEqual(['hello from bob']);

      const stored = await history(chat.id, s.mo);
      expect(stored.slice(0, 2)).toMatchObject([
        { msg_num: 4, message: 'reply from carol', user_id: s.carol.user.id, type: 'chat_msg_type_normal' },
        { msg_num: 3, message: 'hello from bob', user_id: s.bob.user.id, type: 'chat_msg_type_normal', id: received.id },
      ]);
      const listed = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: s.mo })).data.find((c: any) => c.id === chat.id);
      expect(listed.num_messages).toBe(4);
    });

    it('answers malformed frames with an error object and keeps the socket open', async () => {
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      const bob = await connect(s.bob, subs.bob, { no_history: 'true' });
      const carol = await connect(s.carol, subs.carol, { no_history: 'true' });
      const malformed: Array<[string, () => void, string, string?]> = [
        ['not JSON', () => bob.ws.send('this is not json'), 'bad_request'],
        ['a JSON string', () => bob.ws.send('"chat_post"'), 'bad_request'],
        ['JSON null', () => bob.ws.send('null'), 'bad_request'],
        ['an array', () => bob.ws.send('[{"object":"chat_post","message":"hi"}]'), 'bad_request'],
        ['the wrong object', () => bob.ws.send(JSON.stringify({ object: 'chat_message', message: 'wrong object' })), 'bad_request'],
        ['no object', () => bob.ws.send(JSON.stringify({ message: 'no object' })), 'bad_request'],
        ['an empty message', () => bob.ws.send(JSON.stringify({ object: 'chat_post', message: '' })), 'invalid_value', 'message'],
        ['a blank message', () => bob.ws.send(JSON.stringify({ object: 'chat_post', message: '  \n ' })), 'invalid_value', 'message'],
        ['no message', () => bob.ws.send(JSON.stringify({ object: 'chat_post' })), 'invalid_value', 'message'],
        ['a message that is not a string', () => bob.ws.send(JSON.stringify({ object: 'chat_post', message: 42 })), 'invalid_value', 'message'],
        ['a message over 10,000 characters', () => bob.post('m'.repeat(10_001)), 'invalid_value', 'message'],
        ['a binary frame', () => bob.ws.send(Buffer.from(JSON.stringify({ object: 'chat_post', message: 'binary' })), { binary: true }), 'bad_request'],
      ];
      for (const [index, [label, sendIt, type, extra]] of malformed.entries()) {
        sendIt();
        const errorFrame = await bob.waitForFrame((f) => f?.object === 'error', `an error for ${label}`, { from: index });
        expect(bob.frames.length, label).toBe(index + 1);
        expect(errorFrame.type, label).toBe(type);
        if (extra !== undefined) expect(errorFrame.extra, label).toBe(extra);
        expect(typeof errorFrame.extra, label).toBe('string');
        expect(bob.isOpen, label).toBe(true);
      }
      bob.post('m'.repeat(10_000));
      bob.post('finally a good one');
      const good = await carol.waitForMessage('finally a good one');
      expect(good.msg_num).toBe(2);
      expect(carol.frames.map((f) => f.message)).toEqual(['m'.repeat(10_000), 'finally a good one']);
      expect(bob.closeInfo).toBeUndefined();
      const stored = await history(chat.id, s.mo);
      expect(stored.map((m) => m.message)).toEqual(['finally a good one', 'm'.repeat(10_000)]);
    });

    it('closes a socket that sends a frame over 256 KiB with 1009', async () => {
      const { subs } = await newChat('mo', ['bob']);
      const bob = await connect(s.bob, subs.bob, { no_history: 'true' });
      bob.ws.send(JSON.stringify({ object: 'chat_post', message: 'x'.repeat(300 * 1024) }));
      expect((await bob.waitForClose()).code).toBe(1009);
      // The member can connect again.
      expect((await connect(s.bob, subs.bob)).isOpen).toBe(true);
    });

    it('reaches 10 sockets of different users exactly once each', async () => {
      const extra: string[] = [];
      const sessions: Record<string, Session> = { ...s };
      for (let i = 1; i <= 6; i += 1) {
        const email = `fan${i}@example.com`;
        ok(await admin(svc, 'users', { email, password: `fan-${i}-pw`, full_name: `Fan ${i}` }));
        ok(await admin(svc, 'subscriptions', { group: 'demo', user: email, role: 'member' }));
        sessions[email] = await login(svc, email, `fan-${i}-pw`);
        extra.push(email);
      }
      const poster = extra.pop()!;
      const listeners = ['alice', 'bob', 'carol', 'bot', ...extra];
      const { chat, subs } = await newChat('mo', [...listeners, poster], sessions);
      const sockets = [await connect(s.mo, subs.mo, { no_history: 'true' })];
      for (const who of listeners) sockets.push(await connect(sessions[who]!, subs[who], { no_history: 'true' }));
      expect(sockets.length).toBe(10);
      expect(new Set(sockets.map((_, i) => (i === 0 ? 'mo' : listeners[i - 1]))).size).toBe(10);
      const posterSocket = await connect(sessions[poster]!, subs[poster], { no_history: 'true' });

      posterSocket.post('to everyone');
      posterSocket.post('sentinel');
      await Promise.all(sockets.map((socket) => socket.waitForMessage('sentinel')));
      for (const socket of sockets) {
        expect(socket.frames.map((f) => f.message)).toEqual(['to everyone', 'sentinel']);
        expect(socket.frames[0]).toMatchObject({ msg_num: 1, user_id: sessions[poster]!.user.id, chat_id: chat.id });
      }
      // The poster got neither: a post from mo, which the poster does receive, comes first on its socket.
      sockets[0]!.post('from mo');
      await posterSocket.waitForMessage('from mo');
      expect(posterSocket.frames.map((f) => f.message)).toEqual(['from mo']);
    });
  });

  describe('refused upgrades', () => {
    it('refuses a missing, unknown or foreign chatsub_id with invalid chatsub_id', async () => {
      const { subs } = await newChat('mo', ['bob', 'carol']);
      expectRefusal(await refused({ csrf: s.bob.csrf }, s.bob), 400, 'bad_request', 'invalid chatsub_id');
      expectRefusal(await refused({ chatsub_id: '', csrf: s.bob.csrf }, s.bob), 400, 'bad_request', 'invalid chatsub_id');
      expectRefusal(await refused({ chatsub_id: '987654321', csrf: s.bob.csrf }, s.bob), 400, 'bad_request', 'invalid chatsub_id');
      expectRefusal(await refused({ chatsub_id: subs.carol, csrf: s.bob.csrf }, s.bob), 400, 'bad_request', 'invalid chatsub_id');
      // The chat owner cannot use a member's chat_sub either.
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.mo.csrf }, s.mo), 400, 'bad_request', 'invalid chatsub_id');
    });

    it('refuses a closed chat with closed chat', async () => {
      const archive = ok(await call(svc, 'getchats', { group_name: 'demo', show_closed: 'true', limit: 100 }, { auth: s.bob }))
        .data.find((c: any) => c.subject === 'archive');
      expect(archive.chat_sub).toBeTruthy();
      expectRefusal(await refused({ chatsub_id: String(archive.chat_sub.id), csrf: s.bob.csrf }, s.bob), 400, 'bad_request', 'closed chat');
    });

    it('refuses an upgrade without credentials, or with unknown ones, with authentication', async () => {
      const { subs } = await newChat('mo', ['bob']);
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, null), 400, 'authentication');
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, null, { cookie: 'groupsio=not-a-session' }), 400, 'authentication');
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, { bearer: 'not-a-token' }), 400, 'authentication');
    });

    it('refuses a missing or wrong csrf with bad_csrf', async () => {
      const { subs } = await newChat('mo', ['bob']);
      expectRefusal(await refused({ chatsub_id: subs.bob }, s.bob), 400, 'bad_csrf');
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: '' }, s.bob), 400, 'bad_csrf');
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: 'wrong' }, s.bob), 400, 'bad_csrf');
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.carol.csrf }, s.bob), 400, 'bad_csrf');
      // The same upgrade with the right csrf opens.
      const socket = await connect(s.bob, subs.bob);
      expect(socket.isOpen).toBe(true);
    });

    it('refuses a websocket on another path with an error object', async () => {
      const socket = new ChatSocket(svc, {}, s.bob, { path: '/api/v1/nothere' });
      const outcome = await socket.outcome;
      expect(outcome.kind).toBe('refused');
      if (outcome.kind === 'refused') {
        expect(outcome.status).toBe(400);
        expect(outcome.body).toMatchObject({ object: 'error', type: 'bad_request' });
      }
    });
  });

  describe('token authentication', () => {
    it('accepts a Bearer token with the session csrf', async () => {
      const tokenSession = await loginAs(svc, 'bob', { token: 'true' });
      expect(typeof tokenSession.token).toBe('string');
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      await adminPost(chat.id, 'mo', 'for the token');
      const outcome = await tryChatdata(svc, { chatsub_id: subs.bob, csrf: tokenSession.csrf }, { bearer: tokenSession.token! });
      expect(outcome.kind).toBe('open');
      if (outcome.kind !== 'open') return;
      const socket = track(outcome.socket);
      expect((await socket.waitForFrames(1))[0].message).toBe('for the token');
      const carol = await connect(s.carol, subs.carol, { no_history: 'true' });
      socket.post('posted with a token');
      expect(await carol.waitForMessage('posted with a token')).toMatchObject({ user_id: s.bob.user.id });
      // The token with another session's csrf is refused.
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, { bearer: tokenSession.token! }), 400, 'bad_csrf');
    });
  });

  describe('server-side closes', () => {
    it('closing the chat sends everyone the closing notice, then closes with 4000', async () => {
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      const sockets = [
        await connect(s.mo, subs.mo, { no_history: 'true' }),
        await connect(s.bob, subs.bob, { no_history: 'true' }),
        await connect(s.carol, subs.carol, { no_history: 'true' }),
      ];
      ok(await call(svc, 'updatechat', { chat_id: chat.id, is_closed: 'true' }, { method: 'POST', auth: s.mo }));
      for (const socket of sockets) {
        const info = await socket.waitForClose();
        expect(info.code).toBe(4000);
        expect(socket.frames.length).toBe(1);
        expect(socket.frames[0]).toMatchObject({ object: 'chat_message', type: 'chat_msg_type_closed', chat_id: chat.id, msg_num: 1 });
      }
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, s.bob), 400, 'bad_request', 'closed chat');
      expect((await history(chat.id, s.bob))[0]).toMatchObject({ type: 'chat_msg_type_closed' });

      // Reopened, the chat takes sockets again.
      ok(await call(svc, 'updatechat', { chat_id: chat.id, is_closed: 'false' }, { method: 'POST', auth: s.mo }));
      const again = await connect(s.bob, subs.bob);
      const frames = await again.waitForFrames(1);
      expect(frames[0].type).toBe('chat_msg_type_closed');
    });

    it('deleting the chat closes every socket with 4001', async () => {
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      const sockets = [
        await connect(s.mo, subs.mo, { no_history: 'true' }),
        await connect(s.bob, subs.bob, { no_history: 'true' }),
        await connect(s.carol, subs.carol, { no_history: 'true' }),
      ];
      const response = await call(svc, 'deletechat', { chat_id: chat.id }, { method: 'POST', auth: s.mo });
      expect(response.status).toBe(200);
      for (const socket of sockets) expect((await socket.waitForClose()).code).toBe(4001);
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, s.bob), 400, 'bad_request', 'invalid chatsub_id');
    });

    it('leavechat closes that chat_sub\'s sockets with 4002 and no other', async () => {
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      const bob1 = await connect(s.bob, subs.bob, { no_history: 'true' });
      const bob2 = await connect(s.bob, subs.bob, { no_history: 'true' });
      const carol = await connect(s.carol, subs.carol, { no_history: 'true' });
      const left = await call(svc, 'leavechat', { chatsub_id: subs.bob }, { method: 'POST', auth: s.bob });
      expect(left.status).toBe(200);
      expect((await bob1.waitForClose()).code).toBe(4002);
      expect((await bob2.waitForClose()).code).toBe(4002);
      await adminPost(chat.id, 'mo', 'still here');
      await carol.waitForMessage('still here');
      expect(carol.isOpen).toBe(true);
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, s.bob), 400, 'bad_request', 'invalid chatsub_id');
    });

    it('drop-sockets cuts the chat\'s sockets abruptly (1006); other chats stay; reconnecting works', async () => {
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      const other = await newChat('mo', ['carol']);
      const bob = await connect(s.bob, subs.bob, { no_history: 'true' });
      const carol = await connect(s.carol, subs.carol, { no_history: 'true' });
      const carolElsewhere = await connect(s.carol, other.subs.carol, { no_history: 'true' });
      const dropped = ok(await admin(svc, 'faults/drop-sockets', { chat: String(chat.id) }));
      expect(dropped.dropped).toBe(2);
      expect((await bob.waitForClose()).code).toBe(1006);
      expect((await carol.waitForClose()).code).toBe(1006);
      await adminPost(other.chat.id, 'mo', 'other chat still up');
      await carolElsewhere.waitForMessage('other chat still up');

      await adminPost(chat.id, 'mo', 'while you were away');
      const bobAgain = await connect(s.bob, subs.bob);
      await bobAgain.waitForMessage('while you were away');
      const carolAgain = await connect(s.carol, subs.carol, { no_history: 'true' });
      bobAgain.post('back online');
      expect(await carolAgain.waitForMessage('back online')).toMatchObject({ user_id: s.bob.user.id, msg_num: 2 });
    });

    it('the server forgets sockets that were closed', async () => {
      const { subs } = await newChat('mo', ['bob']);
      // The sockets of earlier tests were cut by afterEach; the service notices that on its own time.
      await pollUntil(async () => ((await openSockets()) === 0 ? true : undefined), 'no sockets left from earlier tests');
      const socket = await connect(s.bob, subs.bob);
      expect(await openSockets()).toBe(1);
      socket.ws.close(1000, 'bye');
      expect((await socket.waitForClose()).code).toBe(1000);
      await pollUntil(async () => ((await openSockets()) === 0 ? true : undefined), 'the server to forget the socket');
    });
  });

  describe('members who lose the group', () => {
    it('a banned member\'s sockets close with 4003 and the stream refuses them, though the chat_sub stays', async () => {
      const email = `${unique('banned').replace(' ', '-')}@example.com`;
      ok(await admin(svc, 'users', { email, password: 'pw', full_name: 'Soon Banned' }));
      ok(await admin(svc, 'subscriptions', { group: 'demo', user: email }));
      const member = await login(svc, email, 'pw');
      const { chat, subs } = await newChat('mo', ['member'], { ...s, member });
      const socket = await connect(member, subs.member, { no_history: 'true' });
      const carolSub = ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: s.carol }));
      const carol = await connect(s.carol, carolSub.id, { no_history: 'true' });
      ok(await admin(svc, 'subscriptions', { group: 'demo', user: email, role: 'banned' }));
      expect((await socket.waitForClose()).code).toBe(4003);
      expect(carol.isOpen).toBe(true);
      expectRefusal(await refused({ chatsub_id: subs.member, csrf: member.csrf }, member), 400, 'inadequate_permissions');
    });

    it('a member removed from the group loses the stream the same way', async () => {
      const email = `${unique('leaver').replace(' ', '-')}@example.com`;
      ok(await admin(svc, 'users', { email, password: 'pw', full_name: 'Leaver' }));
      ok(await admin(svc, 'subscriptions', { group: 'demo', user: email }));
      const member = await login(svc, email, 'pw');
      const { subs } = await newChat('mo', ['member'], { ...s, member });
      const socket = await connect(member, subs.member, { no_history: 'true' });
      ok(await admin(svc, 'subscriptions/remove', { group: 'demo', user: email }));
      expect((await socket.waitForClose()).code).toBe(4003);
      // No longer a member of a private group: everything in it answers as unknown (docs/protocol.md "What an outsider can tell").
      expectRefusal(await refused({ chatsub_id: subs.member, csrf: member.csrf }, member), 400, 'bad_request', 'invalid chatsub_id');
    });

    it('drop-sockets can cut one group\'s sockets and leave the others', async () => {
      ok(await admin(svc, 'groups', { name: 'side', members: [{ email: EMAILS.carol, role: 'owner' }],
        chats: [{ subject: 'side chat', owner: EMAILS.carol }] }));
      const sideChats = ok(await call(svc, 'getchats', { group_name: 'side' }, { auth: s.carol }));
      const carol = await connect(s.carol, sideChats.data[0].chat_sub.id, { no_history: 'true' });
      const { subs } = await newChat('mo', ['bob']);
      const bob = await connect(s.bob, subs.bob, { no_history: 'true' });
      expect(ok(await admin(svc, 'faults/drop-sockets', { group: 'side' })).dropped).toBe(1);
      expect((await carol.waitForClose()).code).toBe(1006);
      expect(bob.isOpen).toBe(true);
      expect(ok(await admin(svc, 'faults/drop-sockets', { group: 'demo' })).dropped).toBeGreaterThanOrEqual(1);
      expect((await bob.waitForClose()).code).toBe(1006);
      expect((await admin(svc, 'faults/drop-sockets', { group: 'nosuchgroup' })).body).toMatchObject({ type: 'bad_request' });
    });
  });

  describe('injected faults', () => {
    it('refuse-upgrades answers 503 with a server error and retry-after, and upgrades work once it expires', async () => {
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      const carol = await connect(s.carol, subs.carol, { no_history: 'true' });
      const startedAt = Date.now();
      ok(await admin(svc, 'faults/refuse-upgrades', { seconds: 2 }));
      const first = await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, s.bob);
      expectRefusal(first, 503, 'server');
      const retryAfter = Number(first.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(2);
      // Sockets opened before stay up.
      await adminPost(chat.id, 'mo', 'during the outage');
      await carol.waitForMessage('during the outage');

      let refusals = 0;
      const bob = await pollUntil(async () => {
        const outcome = await tryChatdata(svc, { chatsub_id: subs.bob, csrf: s.bob.csrf, no_history: 'true' }, s.bob);
        if (outcome.kind === 'open') return track(outcome.socket);
        if (outcome.kind === 'refused') {
          expectRefusal(outcome, 503, 'server');
          refusals += 1;
        }
        return undefined;
      }, 'upgrades to be accepted again', 10_000, 200);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1500);
      expect(refusals).toBeGreaterThanOrEqual(1);
      bob.post('after the outage');
      await carol.waitForMessage('after the outage');
    });

    it('an injected rate_limit on upgrades answers 429 once, leaving API calls alone', async () => {
      const { subs } = await newChat('mo', ['bob']);
      ok(await admin(svc, 'faults/errors', { count: 1, type: 'rate_limit', scope: 'upgrade' }));
      ok(await call(svc, 'getchats', { group_name: 'demo' }, { auth: s.bob }));
      const limited = await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, s.bob);
      expectRefusal(limited, 429, 'rate_limit');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const socket = await connect(s.bob, subs.bob);
      expect(socket.isOpen).toBe(true);
    });

    it('an injected API error leaves upgrades alone', async () => {
      const { subs } = await newChat('mo', ['bob']);
      ok(await admin(svc, 'faults/errors', { count: 1, type: 'rate_limit', scope: 'api' }));
      expect((await connect(s.bob, subs.bob)).isOpen).toBe(true);
      const limited = await call(svc, 'getchats', { group_name: 'demo' }, { auth: s.bob });
      expect(limited.status).toBe(429);
      expect(limited.body).toMatchObject({ object: 'error', type: 'rate_limit' });
      ok(await call(svc, 'getchats', { group_name: 'demo' }, { auth: s.bob }));
    });

    it('the upgrade rate limit answers 429 rate_limit with retry-after beyond its burst', async () => {
      const { subs } = await newChat('mo', ['bob']);
      const bob = await loginAs(svc, 'bob');
      ok(await admin(svc, 'rate-limit', { upgrade: '0.5/2' }));
      try {
        const first = await tryChatdata(svc, { chatsub_id: subs.bob, csrf: bob.csrf }, bob);
        const second = await tryChatdata(svc, { chatsub_id: subs.bob, csrf: bob.csrf }, bob);
        for (const outcome of [first, second]) {
          expect(outcome.kind).toBe('open');
          if (outcome.kind === 'open') track(outcome.socket);
        }
        const third = await refused({ chatsub_id: subs.bob, csrf: bob.csrf }, bob);
        expectRefusal(third, 429, 'rate_limit');
        expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      } finally {
        ok(await admin(svc, 'rate-limit', { upgrade: 'off' }));
      }
      expect((await connect(bob, subs.bob)).isOpen).toBe(true);
    });

    it('an injected server error on upgrades answers 400 server once', async () => {
      const { subs } = await newChat('mo', ['bob']);
      ok(await admin(svc, 'faults/errors', { count: 1, type: 'server', scope: 'upgrade' }));
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, s.bob), 400, 'server');
      expect((await connect(s.bob, subs.bob)).isOpen).toBe(true);
    });

    it('restart drops every socket; the service answers again on the same base URL with its data', async () => {
      const { chat, subs } = await newChat('mo', ['bob', 'carol']);
      const bob = await connect(s.bob, subs.bob, { no_history: 'true' });
      const carol = await connect(s.carol, subs.carol, { no_history: 'true' });
      bob.post('before the restart');
      await carol.waitForMessage('before the restart');
      const baseUrl = svc.baseUrl;

      ok(await admin(svc, 'restart'));
      expect((await bob.waitForClose(10_000)).code).toBe(1006);
      expect((await carol.waitForClose(10_000)).code).toBe(1006);

      const stored = await pollUntil(async () => {
        const response = await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: s.carol });
        return response.status === 200 ? response.body : undefined;
      }, 'the service to answer after the restart', 15_000, 200);
      expect(svc.service.baseUrl).toBe(baseUrl);
      expect(stored.data.map((m: any) => m.message)).toEqual(['before the restart']);

      const carolAgain = await pollUntil(async () => {
        const outcome = await tryChatdata(svc, { chatsub_id: subs.carol, csrf: s.carol.csrf }, s.carol);
        return outcome.kind === 'open' ? track(outcome.socket) : undefined;
      }, 'a websocket after the restart', 15_000, 200);
      await carolAgain.waitForMessage('before the restart');
      const bobAgain = await connect(s.bob, subs.bob, { no_history: 'true' });
      bobAgain.post('after the restart');
      expect(await carolAgain.waitForMessage('after the restart')).toMatchObject({ msg_num: 2 });
    });
  });

  // Last: it ends every session of this service.
  describe('expired sessions', () => {
    it('expire-sessions makes a new upgrade answer expired, until the user logs in again', async () => {
      const tokenSession = await loginAs(svc, 'carol', { token: 'true' });
      const { subs } = await newChat('mo', ['bob', 'carol']);
      const expired = ok(await admin(svc, 'faults/expire-sessions'));
      expect(expired.expired).toBeGreaterThanOrEqual(2);
      expectRefusal(await refused({ chatsub_id: subs.bob, csrf: s.bob.csrf }, s.bob), 400, 'expired');
      expectRefusal(await refused({ chatsub_id: subs.carol, csrf: tokenSession.csrf }, { bearer: tokenSession.token! }), 400, 'expired');
      const fresh = await loginAs(svc, 'bob');
      const socket = await connect(fresh, subs.bob);
      expect(socket.isOpen).toBe(true);
    });
  });
});

describe('chatdata ping watchdog', () => {
  let svc: TestService;
  const sockets: ChatSocket[] = [];

  beforeAll(async () => {
    svc = await startTestService({ pingIntervalMs: 150 });
  });

  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await svc?.close();
  });

  it('cuts a socket that does not answer pings and keeps one that does', async () => {
    const bob = await loginAs(svc, 'bob');
    const carol = await loginAs(svc, 'carol');
    const general = ok(await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob })).data.find((c: any) => c.subject === 'general');
    const carolSub = ok(await call(svc, 'getchats', { group_name: 'demo' }, { auth: carol })).data.find((c: any) => c.subject === 'general').chat_sub;
    const hung = await tryChatdata(svc, { chatsub_id: String(general.chat_sub.id), csrf: bob.csrf, no_history: 'true' }, bob, { autoPong: false });
    const alive = await tryChatdata(svc, { chatsub_id: String(carolSub.id), csrf: carol.csrf, no_history: 'true' }, carol);
    if (hung.kind !== 'open' || alive.kind !== 'open') throw new Error('both upgrades should open');
    sockets.push(hung.socket, alive.socket);
    let pings = 0;
    const threePings = new Promise<void>((resolve) => {
      alive.socket.ws.on('ping', () => {
        pings += 1;
        if (pings === 3) resolve();
      });
    });
    const info = await hung.socket.waitForClose(5000);
    // A peer that stopped answering is cut without a close handshake.
    expect(info.code).toBe(1006);
    // Several ping rounds later the answering socket is still up and still gets posts.
    await threePings;
    expect(alive.socket.isOpen).toBe(true);
    expect(alive.socket.closeInfo).toBeUndefined();
    ok(await admin(svc, 'chats/messages', { chat: 'general', user: 'mo@example.com', message: 'still alive' }));
    await alive.socket.waitForMessage('still alive');
  });
});

describe.each(['opaque', 'big'] as const)('chatdata websocket with %s ids', (idStyle) => {
  let svc: TestService;
  const opened2: ChatSocket[] = [];

  beforeAll(async () => {
    svc = await startTestService({ idStyle });
  });

  afterAll(async () => {
    for (const socket of opened2) socket.close();
    await svc?.close();
  });

  it('joins, connects with the chatsub_id as received, posts and receives', async () => {
    const mo = await loginAs(svc, 'mo');
    const bob = await loginAs(svc, 'bob');
    const carol = await loginAs(svc, 'carol');
    const chat = ok(await call(svc, 'newchat', { group_name: 'demo', subject: `${idStyle} stream`, desc: 'd' }, { method: 'POST', auth: mo }));
    const bobSub = ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: bob }));
    const carolSub = ok(await call(svc, 'joinchat', { chat_id: chat.id }, { method: 'POST', auth: carol }));
    expect(typeof bobSub.id).toBe('string');
    ok(await admin(svc, 'chats/messages', { chat: chat.id, user: 'mo@example.com', message: 'first' }));

    const bobSocket = await openChat(svc, bob, bobSub.id);
    opened2.push(bobSocket);
    const carolSocket = await openChat(svc, carol, carolSub.id, { no_history: 'true' });
    opened2.push(carolSocket);
    const [first] = await bobSocket.waitForFrames(1);
    expect(first).toMatchObject({ message: 'first', chat_id: chat.id, user_id: mo.user.id });
    if (idStyle === 'big') {
      expect(bobSocket.raw[0]).toContain(`"chat_id":${chat.id}`);
      expect(BigInt(first.id) > 2n ** 53n).toBe(true);
    } else {
      expect(bobSocket.raw[0]).toContain(`"chat_id":${JSON.stringify(chat.id)}`);
    }

    bobSocket.post('ids survive');
    const received = await carolSocket.waitForMessage('ids survive');
    expect(received).toMatchObject({ chat_id: chat.id, user_id: bob.user.id, group_id: chat.group_id, msg_num: 2 });
    const stored = ok(await call(svc, 'getchathistory', { chat_id: chat.id }, { auth: mo })).data;
    expect(stored[0]).toMatchObject({ id: received.id, message: 'ids survive' });

    // A chatsub_id off by a little does not name the chat_sub.
    const wrong = idStyle === 'big' ? String(Number(bobSub.id)) : `${bobSub.id}x`;
    expect(wrong).not.toBe(bobSub.id);
    const refused = await expectRefused(svc, { chatsub_id: wrong, csrf: bob.csrf }, bob);
    expect(refused.body).toMatchObject({ type: 'bad_request', extra: 'invalid chatsub_id' });

    const left = await call(svc, 'leavechat', { chatsub_id: bobSub.id }, { method: 'POST', auth: bob });
    expect(left.status).toBe(200);
    expect((await bobSocket.waitForClose()).code).toBe(4002);
  });
});
