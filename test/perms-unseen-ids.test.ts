import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRefused } from './helpers/chat-socket.js';
import {
  admin, call, EMAILS, expectError, login, loginAs, ok, startTestService, type ApiResponse, type Session, type TestService,
} from './helpers/service.js';

/**
 * Ids that tell nothing (#15 item 8): for a caller who may not see a group (no live subscription, and
 * its archives are not public), every id of the group or in it answers exactly as an id that does not
 * exist: `bad_request` "invalid <parameter>" (docs/protocol.md "What an outsider can tell").
 */

const UNKNOWN = '987654321';

/** What a caller can observe of an answer. */
const seen = (response: ApiResponse) => ({ status: response.status, body: response.body });

describe('an outsider cannot tell which ids exist', () => {
  let svc: TestService;
  let alice: Session;
  let outsider: Session;
  let demoId: string;
  let general: any;

  beforeAll(async () => {
    svc = await startTestService();
    alice = await loginAs(svc, 'alice');
    ok(await admin(svc, 'users', { email: 'nosy@example.com', password: 'nosy-pw', full_name: 'Nosy Parker' }));
    outsider = await login(svc, 'nosy@example.com', 'nosy-pw');
    general = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: alice })).data.find((c: any) => c.subject === 'general');
    demoId = String(general.group_id);
  });
  afterAll(async () => svc?.close());

  /** Asks the same call with a real id and with an unknown one; both must answer alike, and as `extra`. */
  async function same(operation: string, param: string, real: string, extra: string, others: Record<string, string> = {}, method: 'GET' | 'POST' = 'GET') {
    const withReal = seen(await call(svc, operation, { ...others, [param]: real }, { method, auth: outsider }));
    const withUnknown = seen(await call(svc, operation, { ...others, [param]: UNKNOWN }, { method, auth: outsider }));
    expect({ operation, param, answer: withReal }).toEqual({ operation, param, answer: withUnknown });
    expect(withReal).toEqual({ status: 400, body: { object: 'error', type: 'bad_request', extra } });
  }

  it('answers a real chat_id of a private group as an unknown one, in every chat operation', async () => {
    await same('getchathistory', 'chat_id', String(general.id), 'invalid chat_id');
    await same('joinchat', 'chat_id', String(general.id), 'invalid chat_id', {}, 'POST');
    await same('updatechat', 'chat_id', String(general.id), 'invalid chat_id', { subject: 'x' }, 'POST');
    await same('deletechat', 'chat_id', String(general.id), 'invalid chat_id', {}, 'POST');
    await same('leavechat', 'chatsub_id', String(general.chat_sub.id), 'invalid chatsub_id', {}, 'POST');
  });

  it('answers a real group, and a topic in it, as unknown ones in the archive, activity, search and download calls', async () => {
    for (const operation of ['gettopics', 'getmessages', 'getactivitylog', 'searcharchives']) {
      await same(operation, 'group_id', demoId, 'invalid group_id', operation === 'searcharchives' ? { q: 'x' } : {});
    }
    await same('downloadarchives', 'group_id', demoId, 'invalid group_id');
    const topic = ok(await call(svc, 'gettopics', { group_name: 'demo', limit: 1 }, { auth: alice })).data[0];
    await same('gettopic', 'topic_id', String(topic.id), 'invalid topic_id');
  });

  it('answers a real group of someone else as an unknown one, by id and by name', async () => {
    await same('getchats', 'group_id', demoId, 'invalid group_id');
    await same('newchat', 'group_id', demoId, 'invalid group_id', { subject: 's', desc: 'd' }, 'POST');
    await same('newdraft', 'group_id', demoId, 'invalid group_id', { draft_type: 'draft_type_post' }, 'POST');
    await same('getdrafts', 'group_id', demoId, 'invalid group_id');
    await same('getchats', 'group_name', 'demo', 'invalid group_name');
    await same('newdraft', 'group_name', 'demo', 'invalid group_name', { draft_type: 'draft_type_post' }, 'POST');
  });

  it('answers the socket upgrade with a real chat_sub of someone else as an unknown one', async () => {
    const real = await expectRefused(svc, { chatsub_id: String(general.chat_sub.id), csrf: outsider.csrf }, outsider);
    const unknown = await expectRefused(svc, { chatsub_id: UNKNOWN, csrf: outsider.csrf }, outsider);
    expect({ status: real.status, body: real.body }).toEqual({ status: unknown.status, body: unknown.body });
  });

  it('answers a download of a private group\'s attachment as one of an unknown message', async () => {
    const messages = ok(await call(svc, 'getmessages', { group_name: 'demo', limit: 100 }, { auth: alice })).data;
    const url = messages.flatMap((m: any) => m.attachments ?? []).map((a: any) => a.download_url as string)[0]!;
    const messageId = /\/files\/messages\/([^/]+)\//.exec(url)![1]!;
    const fetch = async (target: string) => {
      const response = await request(target, { headers: { cookie: outsider.cookie }, dispatcher: svc.dispatcher });
      return { status: response.statusCode, body: await response.body.text() };
    };
    expect(await fetch(url)).toEqual(await fetch(url.replace(`/files/messages/${messageId}/`, `/files/messages/${UNKNOWN}/`)));
  });

  it('still tells a member what a group they see denies them, and a public group is seen by everyone', async () => {
    const dave = await loginAs(svc, 'dave');
    expectError(await call(svc, 'getchathistory', { chat_id: general.id }, { auth: dave }), 'inadequate_permissions', 'chat_visible');
    ok(await admin(svc, 'groups', {
      name: 'open-house', settings: { privacy: 'group_privacy_none' }, members: [{ email: EMAILS.alice, role: 'owner' }],
      chats: [{ subject: 'lobby', owner: EMAILS.alice }],
    }));
    const lobby = ok(await call(svc, 'getchats', { group_name: 'open-house' }, { auth: alice })).data[0];
    expectError(await call(svc, 'getchathistory', { chat_id: lobby.id }, { auth: outsider }), 'inadequate_permissions', 'chat_visible');
    expectError(await call(svc, 'getchats', { group_name: 'open-house' }, { auth: outsider }), 'inadequate_permissions', 'chat_visible');
  });
});
