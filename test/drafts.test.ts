import { FormData, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SEED } from '../src/service/demo-seed.js';
import type { Seed } from '../src/service/seed.js';
import {
  admin, call, expectError, login, loginAs, startTestService, type ApiResponse, type Session, type TestService,
} from './helpers/service.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

const demoGroup = DEMO_SEED.groups![0]!;
/** The demo seed, three more people of the demo group, and a second group with a closed topic. */
const SEED: Seed = {
  users: [
    ...DEMO_SEED.users!,
    { email: 'erin@example.com', password: 'erin-pw', full_name: 'Erin Leaving' },
    { email: 'gina@example.com', password: 'gina-pw', full_name: 'Gina Soon Banned' },
    { email: 'olga@example.com', password: 'olga-pw', full_name: 'Olga Outsider' },
  ],
  groups: [
    {
      ...demoGroup,
      members: [
        ...demoGroup.members!,
        { email: 'erin@example.com', role: 'member' },
        { email: 'gina@example.com', role: 'member' },
      ],
    },
    {
      name: 'other',
      members: [{ email: 'alice@example.com', role: 'owner' }, { email: 'bob@example.com', role: 'member' }],
      topics: [
        { subject: 'Old business', closed: true, messages: [{ from: 'alice@example.com', body: 'Closed now.' }] },
        { subject: 'Open business', messages: [{ from: 'alice@example.com', body: 'Still open.' }] },
      ],
    },
  ],
};

let svc: TestService;
let alice: Session;
let bob: Session;
let carol: Session;
let dave: Session;
let olga: Session;

/** Calls an operation (POST unless told) as a session; csrf is added by the helper. */
function op(session: Session | null, name: string, params: Record<string, unknown> = {}, method: 'GET' | 'POST' = 'POST') {
  return call(svc, name, params, { auth: session, method });
}

function ok(response: ApiResponse): any {
  expect(response.status, response.text).toBe(200);
  return response.body;
}

async function newDraft(session: Session, params: Record<string, unknown> = {}): Promise<any> {
  return ok(await op(session, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post', ...params }));
}

function groupIdOf(session: Session, name: string): string {
  const subs = session.user.subscriptions as Array<{ group_name: string; group_id: unknown }>;
  return String(subs.find((s) => s.group_name === name)!.group_id);
}

/** Messages of a group, newest msg_num first. */
async function messagesOf(session: Session, group: string): Promise<any[]> {
  return ok(await op(session, 'getmessages', { group_name: group, sort_field: 'msg_num', sort_dir: 'desc', limit: 100 }, 'GET')).data;
}

interface Upload {
  name: string;
  type: string;
  data: Buffer;
}

/** addattachments as multipart/form-data, with draft_id and csrf as form fields. */
async function upload(session: Session, draftId: string, files: Upload[], csrf = session.csrf): Promise<ApiResponse> {
  const form = new FormData();
  form.append('draft_id', draftId);
  form.append('csrf', csrf);
  for (const file of files) form.append('file', new Blob([file.data], { type: file.type }), file.name);
  return call(svc, 'addattachments', {}, { auth: session, method: 'POST', csrf: false, body: form as never });
}

async function download(url: string, session?: Session) {
  const headers: Record<string, string> = session ? { cookie: session.cookie } : {};
  const response = await request(url, { headers, dispatcher: svc.dispatcher });
  const data = Buffer.from(await response.body.arrayBuffer());
  return { status: response.statusCode, headers: response.headers, data, json: () => JSON.parse(data.toString('utf8')) };
}

beforeAll(async () => {
  // Opaque ids: up to 255 characters with `/ + = & % :`, so download URLs and draft_id must be encoded.
  svc = await startTestService({ idStyle: 'opaque', seed: SEED });
  [alice, bob, carol, dave] = await Promise.all([loginAs(svc, 'alice'), loginAs(svc, 'bob'), loginAs(svc, 'carol'), loginAs(svc, 'dave')]);
  olga = await login(svc, 'olga@example.com', 'olga-pw');
});

afterAll(async () => {
  await svc?.close();
});

describe('newdraft', () => {
  it('creates an empty post draft', async () => {
    const draft = await newDraft(bob);
    expect(draft).toMatchObject({
      object: 'draft', draft_type: 'draft_type_post', subject: '', body: '', body_type: 'text', is_special: false,
      num_attachments: 0, next_attachment_id: 1, bcc_me: false, bcc_all: false, attachments: [],
    });
    expect(String(draft.user_id)).toBe(String(bob.user.id));
    expect(String(draft.group_id)).toBe(groupIdOf(bob, 'demo'));
    expect(String(draft.message_id)).toBe('0');
    expect(draft.created).toBe(draft.updated);
  });

  it('takes group_id and initial contents', async () => {
    const draft = await newDraft(bob, {
      group_name: undefined, group_id: groupIdOf(bob, 'demo'), subject: '  Hello  ', body: '<p>Hi</p>', body_type: 'html', bcc_me: true,
    });
    expect(draft).toMatchObject({ subject: 'Hello', body: '<p>Hi</p>', body_type: 'html', bcc_me: true, bcc_all: false });
  });

  it('starts a reply with the replied message and a Re: subject', async () => {
    const messages = await messagesOf(bob, 'demo');
    const meeting = messages.find((m) => m.subject === 'Meeting notes');
    const reply = await newDraft(bob, { draft_type: 'draft_type_reply', message_id: String(meeting.id) });
    expect(reply).toMatchObject({ draft_type: 'draft_type_reply', subject: 'Re: Meeting notes' });
    expect(String(reply.message_id)).toBe(String(meeting.id));
    // A subject that already is a reply is not prefixed twice.
    const answer = messages.find((m) => m.subject.startsWith('Re: Welcome'));
    expect((await newDraft(bob, { draft_type: 'draft_type_reply', message_id: String(answer.id) })).subject).toBe(answer.subject);
  });

  it('refuses a missing or unknown group and draft_type', async () => {
    expectError(await op(bob, 'newdraft', { draft_type: 'draft_type_post' }), 'bad_request', 'invalid group_id');
    expectError(await op(bob, 'newdraft', { group_id: 'nope', draft_type: 'draft_type_post' }), 'bad_request', 'invalid group_id');
    expectError(await op(bob, 'newdraft', { group_name: 'nope', draft_type: 'draft_type_post' }), 'bad_request', 'invalid group_name');
    expectError(await op(bob, 'newdraft', { group_name: 'demo' }), 'bad_request', 'invalid draft_type');
    expectError(await op(bob, 'newdraft', { group_name: 'demo', draft_type: 'post' }), 'bad_request', 'invalid draft_type');
  });

  it('refuses a reply without a message of the group', async () => {
    const reply = { group_name: 'demo', draft_type: 'draft_type_reply' };
    expectError(await op(bob, 'newdraft', reply), 'bad_request', 'invalid message_id');
    expectError(await op(bob, 'newdraft', { ...reply, message_id: 'nope' }), 'bad_request', 'invalid message_id');
    const elsewhere = (await messagesOf(bob, 'other'))[0];
    expectError(await op(bob, 'newdraft', { ...reply, message_id: String(elsewhere.id) }), 'bad_request', 'invalid message_id');
  });

  it('needs can_post: banned members and non-members are refused', async () => {
    expectError(await op(dave, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' }), 'inadequate_permissions', 'can_post');
    // A non-member of a private group is told what an unknown group gets (docs/protocol.md "What an outsider can tell").
    expectError(await op(olga, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' }), 'bad_request', 'invalid group_name');
  });

  it('needs a caller and the csrf token', async () => {
    expectError(await op(null, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' }), 'authentication');
    const response = await call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' },
      { auth: bob, method: 'POST', csrf: false });
    expectError(response, 'bad_csrf');
    expectError(await call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' },
      { auth: bob, method: 'POST', csrf: '12345' }), 'bad_csrf');
  });
});

describe('updatedraft', () => {
  it('saves the fields it is given and keeps the others', async () => {
    const draft = await newDraft(bob);
    await admin(svc, 'clock/advance', { seconds: 1 });
    const saved = ok(await op(bob, 'updatedraft', {
      draft_id: String(draft.id), subject: ' Plans ', body: 'first', body_type: 'html', bcc_me: 'true', bcc_all: 1,
    }));
    expect(saved).toMatchObject({ subject: 'Plans', body: 'first', body_type: 'html', bcc_me: true, bcc_all: true });
    expect(String(saved.id)).toBe(String(draft.id));
    expect(Date.parse(saved.updated)).toBeGreaterThan(Date.parse(draft.updated));
    const again = ok(await op(bob, 'updatedraft', { draft_id: String(draft.id), body: 'second', bcc_me: false }));
    expect(again).toMatchObject({ subject: 'Plans', body: 'second', body_type: 'html', bcc_me: false, bcc_all: true });
  });

  it('limits subject to 255 characters and body to 1 MB', async () => {
    const id = String((await newDraft(bob)).id);
    expect(ok(await op(bob, 'updatedraft', { draft_id: id, subject: 's'.repeat(255) })).subject).toHaveLength(255);
    expectError(await op(bob, 'updatedraft', { draft_id: id, subject: 's'.repeat(256) }), 'bad_request', 'invalid subject');
    expect(ok(await op(bob, 'updatedraft', { draft_id: id, body: 'b'.repeat(1024 * 1024) })).body).toHaveLength(1024 * 1024);
    expectError(await op(bob, 'updatedraft', { draft_id: id, body: 'b'.repeat(1024 * 1024 + 1) }), 'bad_request', 'invalid body');
    // Bytes, not characters.
    expectError(await op(bob, 'updatedraft', { draft_id: id, body: 'é'.repeat(512 * 1024 + 1) }), 'bad_request', 'invalid body');
  });

  it('refuses bad values and changes nothing then', async () => {
    const id = String((await newDraft(bob, { subject: 'Kept' })).id);
    expectError(await op(bob, 'updatedraft', { draft_id: id, subject: 'Lost', body_type: 'markdown' }), 'bad_request', 'invalid body_type');
    expectError(await op(bob, 'updatedraft', { draft_id: id, subject: 'Lost', bcc_me: 'maybe' }), 'invalid_value', 'bcc_me');
    expect(ok(await op(bob, 'updatedraft', { draft_id: id })).subject).toBe('Kept');
  });

  it('answers a missing, unknown or someone else\'s draft alike', async () => {
    const id = String((await newDraft(bob)).id);
    expectError(await op(bob, 'updatedraft', { subject: 'x' }), 'bad_request', 'invalid draft_id');
    expectError(await op(bob, 'updatedraft', { draft_id: 'nope', subject: 'x' }), 'bad_request', 'invalid draft_id');
    expectError(await op(alice, 'updatedraft', { draft_id: id, subject: 'x' }), 'bad_request', 'invalid draft_id');
  });
});

describe('addattachments', () => {
  it('stores uploaded files with per-draft ids and serves them to the draft\'s owner', async () => {
    const draft = await newDraft(bob);
    const id = String(draft.id);
    const first = ok(await upload(bob, id, [
      { name: 'notes.txt', type: 'text/plain', data: Buffer.from('some notes\n') },
      { name: 'dir/dot.png', type: 'image/png', data: PNG },
    ]));
    expect(first).toMatchObject({ num_attachments: 2, next_attachment_id: 3 });
    expect(first.attachments.map((a: any) => [String(a.id), a.filename, a.media_type]))
      .toEqual([['1', 'notes.txt', 'text/plain'], ['2', 'dot.png', 'image/png']]);
    expect(first.attachments[1].image_thumbnail_url).toBe(first.attachments[1].download_url);

    const text = await download(first.attachments[0].download_url, bob);
    expect(text.status).toBe(200);
    expect(text.headers['content-type']).toBe('text/plain');
    expect(text.headers['content-disposition']).toMatch(/^attachment; filename="notes.txt"/);
    expect(text.headers['x-content-type-options']).toBe('nosniff');
    expect(text.data.toString()).toBe('some notes\n');
    const image = await download(first.attachments[1].download_url, bob);
    expect(image.headers['content-disposition']).toMatch(/^inline/);
    expect(image.data.equals(PNG)).toBe(true);

    const second = ok(await upload(bob, id, [{ name: 'more.txt', type: 'text/plain', data: Buffer.from('more') }]));
    expect(second).toMatchObject({ num_attachments: 3, next_attachment_id: 4 });
    expect(String(second.attachments[2].id)).toBe('3');
  });

  it('keeps draft files private', async () => {
    const id = String((await newDraft(bob)).id);
    const draft = ok(await upload(bob, id, [{ name: 'secret.txt', type: 'text/plain', data: Buffer.from('secret') }]));
    const url = draft.attachments[0].download_url as string;
    const other = await download(url, alice);
    expect(other.status).toBe(400);
    expect(other.json()).toEqual({ object: 'error', type: 'bad_request', extra: 'invalid draft_id' });
    expect((await download(url)).json()).toMatchObject({ object: 'error', type: 'authentication' });
    expect((await download(url.replace(/\/1\/secret\.txt$/, '/9/secret.txt'), bob)).json())
      .toMatchObject({ type: 'bad_request', extra: 'invalid attachment_id' });
  });

  it('refuses a call without files, someone else\'s draft and a bad csrf', async () => {
    const id = String((await newDraft(bob)).id);
    expectError(await upload(bob, id, []), 'bad_request', 'no attachments');
    expectError(await op(bob, 'addattachments', { draft_id: id }), 'bad_request', 'no attachments');
    const file = { name: 'a.txt', type: 'text/plain', data: Buffer.from('a') };
    expectError(await upload(alice, id, [file]), 'bad_request', 'invalid draft_id');
    expectError(await upload(bob, 'nope', [file]), 'bad_request', 'invalid draft_id');
    expectError(await upload(bob, id, [file], 'wrong'), 'bad_csrf');
  });
});

describe('getdrafts', () => {
  it('lists the caller\'s own drafts, newest update first, optionally of one group', async () => {
    const mine = ok(await op(carol, 'getdrafts', {}, 'GET'));
    expect(mine).toMatchObject({ object: 'list', total_count: 0, data: [] });
    const a = await newDraft(carol, { subject: 'a' });
    const b = await newDraft(carol, { subject: 'b' });
    await admin(svc, 'clock/advance', { seconds: 1 });
    ok(await op(carol, 'updatedraft', { draft_id: String(a.id), body: 'touched' }));
    const list = ok(await op(carol, 'getdrafts', {}, 'GET'));
    expect(list).toMatchObject({ total_count: 2, sort_field: 'updated', sort_dir: 'desc' });
    expect(list.data.map((d: any) => d.subject)).toEqual(['a', 'b']);
    const byCreated = ok(await op(carol, 'getdrafts', { sort_field: 'created', sort_dir: 'desc' }, 'GET'));
    expect(byCreated.data.map((d: any) => String(d.id))).toEqual([String(b.id), String(a.id)]);
    expect(ok(await op(carol, 'getdrafts', { group_name: 'demo' }, 'GET')).total_count).toBe(2);
    expect(ok(await op(carol, 'getdrafts', { group_id: groupIdOf(carol, 'demo') }, 'GET')).total_count).toBe(2);
    // Other people's drafts never show.
    const bobs = ok(await op(bob, 'getdrafts', { limit: 100 }, 'GET'));
    expect(bobs.data.every((d: any) => String(d.user_id) === String(bob.user.id))).toBe(true);
    expect(bobs.data.some((d: any) => String(d.id) === String(a.id))).toBe(false);
  });

  it('pages by id and refuses unknown groups and sort fields', async () => {
    const all = ok(await op(bob, 'getdrafts', { limit: 100, sort_field: 'id', sort_dir: 'asc' }, 'GET')).data;
    expect(all.length).toBeGreaterThan(3);
    const seen: string[] = [];
    let params: Record<string, unknown> = { limit: 2, sort_field: 'id', sort_dir: 'asc' };
    for (;;) {
      const page = ok(await op(bob, 'getdrafts', params, 'GET'));
      seen.push(...page.data.map((d: any) => String(d.id)));
      if (!page.has_more) break;
      params = { limit: 2, page_token: String(page.next_page_token) };
    }
    expect(seen).toEqual(all.map((d: any) => String(d.id)));
    expectError(await op(bob, 'getdrafts', { group_name: 'nope' }, 'GET'), 'bad_request', 'invalid group_name');
    expectError(await op(bob, 'getdrafts', { sort_field: 'subject' }, 'GET'), 'invalid_value', 'sort_field');
  });
});

describe('postdraft', () => {
  it('runs the whole sequence: newdraft, updatedraft, addattachments, postdraft', async () => {
    const lastNum = (await messagesOf(bob, 'demo'))[0].msg_num as number;
    const id = String((await newDraft(bob)).id);
    ok(await op(bob, 'updatedraft', { draft_id: id, subject: 'Release notes' }));
    ok(await op(bob, 'updatedraft', { draft_id: id, subject: 'Release notes #Help', body: 'What changed?' }));
    ok(await upload(bob, id, [
      { name: 'changes.txt', type: 'text/plain', data: Buffer.from('all of it') },
      { name: 'chart.png', type: 'image/png', data: PNG },
    ]));
    const message = ok(await op(bob, 'postdraft', { draft_id: id }));
    expect(message).toMatchObject({
      object: 'message', subject: 'Release notes #Help', subject_with_tags: '[demo] Release notes #Help', body: 'What changed?',
      is_plain_text: true, is_reply: false, msg_num: lastNum + 1,
    });
    expect(String(message.user_id)).toBe(String(bob.user.id));
    // An existing tag, matched without regard to case.
    expect(message.hashtags.map((t: any) => t.name)).toEqual(['help']);
    expect(message.attachments.map((a: any) => [String(a.id), a.filename])).toEqual([['1', 'changes.txt'], ['2', 'chart.png']]);

    // The files moved to the message: members of the group can fetch them, others cannot.
    const url = message.attachments[1].download_url as string;
    expect(url).toContain('/files/messages/');
    const fetched = await download(url, carol);
    expect(fetched.status).toBe(200);
    expect(fetched.data.equals(PNG)).toBe(true);
    // A non-member of a private group is told what an unknown message gets (docs/protocol.md "What an outsider can tell").
    expect((await download(url, olga)).json()).toEqual({ object: 'error', type: 'bad_request', extra: 'invalid message_id' });
    expect((await download(url, dave)).json()).toMatchObject({ type: 'inadequate_permissions' });

    // The draft is gone.
    expectError(await op(bob, 'updatedraft', { draft_id: id, body: 'x' }), 'bad_request', 'invalid draft_id');
    expectError(await op(bob, 'postdraft', { draft_id: id }), 'bad_request', 'invalid draft_id');
    const drafts = ok(await op(bob, 'getdrafts', { limit: 100 }, 'GET')).data;
    expect(drafts.some((d: any) => String(d.id) === id)).toBe(false);

    // A new topic holds it, and the activity log says so.
    const topic = ok(await op(bob, 'gettopic', { topic_id: String(message.topic_id) }, 'GET'));
    expect(topic.topic).toMatchObject({ subject: 'Release notes #Help', num_messages: 1, has_attachments: true });
    const log = ok(await op(alice, 'getactivitylog', { group_name: 'demo', action: 'topic_created' }, 'GET'));
    expect(log.data[0]).toMatchObject({ via: 'via_api' });
    expect(log.data[0].entry).toContain('Release notes');

    // Alice replies, adding a tag she may create: it joins the topic.
    const reply = await newDraft(alice, { draft_type: 'draft_type_reply', message_id: String(message.id), body: 'Everything.' });
    expect(reply.subject).toBe('Re: Release notes #Help');
    ok(await op(alice, 'updatedraft', { draft_id: String(reply.id), subject: 'Re: Release notes #Help #fresh' }));
    const answer = ok(await op(alice, 'postdraft', { draft_id: String(reply.id) }));
    expect(answer).toMatchObject({ is_reply: true, msg_num: lastNum + 2, subject: 'Re: Release notes #Help #fresh' });
    expect(String(answer.topic_id)).toBe(String(message.topic_id));
    expect(answer.hashtags.map((t: any) => t.name).sort()).toEqual(['fresh', 'help']);
    const after = ok(await op(bob, 'gettopic', { topic_id: String(message.topic_id) }, 'GET'));
    expect(after.topic.num_messages).toBe(2);
    expect(after.topic.hashtags.map((t: any) => t.name).sort()).toEqual(['fresh', 'help']);
    const replied = ok(await op(alice, 'getactivitylog', { group_name: 'demo', action: 'message_posted' }, 'GET'));
    expect(replied.data[0].entry).toContain('Release notes');
  });

  it('posts a reply with an empty subject as Re: the replied subject', async () => {
    const meeting = (await messagesOf(bob, 'demo')).find((m) => m.subject === 'Meeting notes');
    const id = String((await newDraft(bob, { draft_type: 'draft_type_reply', message_id: String(meeting.id) })).id);
    ok(await op(bob, 'updatedraft', { draft_id: id, subject: '', body: '<p>Noted.</p>', body_type: 'html' }));
    const message = ok(await op(bob, 'postdraft', { draft_id: id }));
    expect(message).toMatchObject({ subject: 'Re: Meeting notes', is_plain_text: false, is_reply: true });
    expect(String(message.topic_id)).toBe(String(meeting.topic_id));
  });

  it('needs a subject for a post and a body for both', async () => {
    const id = String((await newDraft(bob, { body: 'text' })).id);
    expectError(await op(bob, 'postdraft', { draft_id: id }), 'bad_request', 'invalid subject');
    ok(await op(bob, 'updatedraft', { draft_id: id, subject: 'Subject', body: '  \n ' }));
    expectError(await op(bob, 'postdraft', { draft_id: id }), 'bad_request', 'invalid body');
  });

  it('refuses tags the caller may not create, and leaves everything as it was', async () => {
    const topicsBefore = ok(await op(bob, 'gettopics', { group_name: 'demo' }, 'GET')).total_count;
    const id = String((await newDraft(bob, { subject: 'Shiny #help #brandnew', body: 'text' })).id);
    expectError(await op(bob, 'postdraft', { draft_id: id }), 'bad_request', 'invalid hashtag brandnew');
    expect(ok(await op(bob, 'gettopics', { group_name: 'demo' }, 'GET')).total_count).toBe(topicsBefore);
    expect(ok(await op(bob, 'updatedraft', { draft_id: id })).subject).toBe('Shiny #help #brandnew');
  });

  it('refuses a reply to a closed topic', async () => {
    const messages = await messagesOf(bob, 'other');
    const closed = messages.find((m) => m.subject === 'Old business');
    const id = String((await newDraft(bob, {
      group_name: 'other', draft_type: 'draft_type_reply', message_id: String(closed.id), body: 'Late.',
    })).id);
    expectError(await op(bob, 'postdraft', { draft_id: id }), 'bad_request', 'topic closed');
    expect(ok(await op(bob, 'updatedraft', { draft_id: id })).body).toBe('Late.');
  });

  it('checks can_post again when posting', async () => {
    const gina = await login(svc, 'gina@example.com', 'gina-pw');
    const erin = await login(svc, 'erin@example.com', 'erin-pw');
    const ginaDraft = String((await newDraft(gina, { subject: 'Hi', body: 'text' })).id);
    const erinDraft = String((await newDraft(erin, { subject: 'Hi', body: 'text' })).id);
    await admin(svc, 'subscriptions', { group: 'demo', user: 'gina@example.com', role: 'banned' });
    await admin(svc, 'subscriptions/remove', { group: 'demo', user: 'erin@example.com' });
    expectError(await op(gina, 'postdraft', { draft_id: ginaDraft }), 'inadequate_permissions', 'can_post');
    expectError(await op(erin, 'postdraft', { draft_id: erinDraft }), 'inadequate_permissions', 'can_post');
  });

  it('answers a missing or someone else\'s draft alike', async () => {
    const id = String((await newDraft(bob, { subject: 'Mine', body: 'text' })).id);
    expectError(await op(bob, 'postdraft', {}), 'bad_request', 'invalid draft_id');
    expectError(await op(alice, 'postdraft', { draft_id: id }), 'bad_request', 'invalid draft_id');
  });
});

describe('deletedraft', () => {
  it('removes the caller\'s draft with an empty HTTP 200', async () => {
    const id = String((await newDraft(bob)).id);
    expectError(await op(alice, 'deletedraft', { draft_id: id }), 'bad_request', 'invalid draft_id');
    const response = await op(bob, 'deletedraft', { draft_id: id });
    expect(response.status).toBe(200);
    expect(response.text).toBe('');
    expectError(await op(bob, 'deletedraft', { draft_id: id }), 'bad_request', 'invalid draft_id');
    expectError(await op(bob, 'deletedraft', {}), 'bad_request', 'invalid draft_id');
    const drafts = ok(await op(bob, 'getdrafts', { limit: 100 }, 'GET')).data;
    expect(drafts.some((d: any) => String(d.id) === id)).toBe(false);
  });
});
