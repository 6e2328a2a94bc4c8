import { existsSync, readFileSync } from 'node:fs';
import { parse as parseLossless } from 'lossless-json';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GroupsClient } from '../src/api/index.js';
import { ID_STYLES, type IdStyle } from '../src/service/ids.js';
import { Clients } from './helpers/client.js';
import { admin, call, loginAs, ok, startTestService, type Session, type TestService } from './helpers/service.js';
import { readSpecTables, SHARED_SPEC_FILE, SPEC_COPY_FILE, SPEC_FILE, type SpecTables } from './helpers/spec-tables.js';
import { NULLABLE, SpecChecker } from './helpers/spec-values.js';

/**
 * Issue #15 items 18 and 19: every object of spec part 2 is answered with every field of its table,
 * of its type, and every list carries the members spec 2.3 and 4.2 give it. The tables are read from
 * the spec itself at test time, so a field added to the spec and not to the service fails here.
 * Each id style is checked twice: as the client hands answers on, and on the wire (ids keep the style).
 */

const SPEC: SpecTables = readSpecTables();

describe('the spec tables', () => {
  it('come from the spec beside the repository, and the repository\'s copy (read on a clean clone) is it word for word', () => {
    const copy = readFileSync(SPEC_COPY_FILE, 'utf8');
    expect(copy).toMatch(/^## 2\b/m);
    if (existsSync(SHARED_SPEC_FILE)) expect(copy).toBe(readFileSync(SHARED_SPEC_FILE, 'utf8'));
    else expect(SPEC_FILE).toBe(SPEC_COPY_FILE);
  });

  it('reads every object of part 2, with the group table whole', () => {
    for (const name of ['success', 'error', 'list', 'perms', 'subscription', 'member_info', 'group', 'topic', 'hashtag',
      'message', 'attachment', 'activity_log', 'chat', 'chat_sub', 'chat_message', 'draft']) {
      expect(SPEC.has(name), name).toBe(true);
    }
    const group = SPEC.get('group')!.fields;
    for (const field of ['unmoderate_users_after', 'close_threads_after', 'sticky_wiki_page_id', 'allow_reposts',
      'plain_text_only', 'reply_to', 'calendar_access', 'plan', 'handle_virus', 'email_delivery_default', 'max_photo_size_wiki_images']) {
      expect(group.has(field), field).toBe(true);
    }
    expect(group.get('subgroupcategoryid')).toEqual({ kind: 'id' });
    expect(group.get('close_threads_after')).toEqual({ kind: 'number' });
    expect(SPEC.get('group messages')!.fields.get('topic')).toEqual({ kind: 'object', of: 'topic' });
    expect(SPEC.get('topic list')!.fields.get('group')).toEqual({ kind: 'object', of: 'group' });
  });
});

/** What every style's service answers, through the client and on the wire. */
describe.each(ID_STYLES.map((style) => [style]))('answers with --ids %s', (style: IdStyle) => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  let alice: GroupsClient;
  let bob: GroupsClient;
  let wireAlice: Session;

  beforeAll(async () => {
    svc = await startTestService({ idStyle: style });
    alice = clients.make('alice');
    bob = clients.make('bob');
    wireAlice = await loginAs(svc, 'alice');
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc?.close();
  });

  it('as the client hands them on: every field of every object, of its type', async () => {
    const check = new SpecChecker(SPEC, 'client');
    const demo = { group_name: 'demo' } as const;

    const topics = await alice.getTopics({ ...demo, limit: 100 });
    check.list(topics, 'topic', 'gettopics(demo)', 'topic list');
    check.list(await alice.getTopics({ limit: 100 }), 'topic', 'gettopics()', 'topic list');
    const withFiles = topics.data.find((topic) => topic.has_attachments)!;
    check.list(await alice.getTopic({ topic_id: withFiles.id, limit: 100 }), 'message', 'gettopic', 'topic messages');
    check.list(await alice.getMessages({ ...demo, limit: 100 }), 'message', 'getmessages', 'group messages');
    check.list(await alice.searchArchives({ ...demo, q: 'notes' }), 'message', 'searcharchives');
    check.list(await alice.getActivityLog({ ...demo, limit: 100 }), 'activity_log', 'getactivitylog', 'activity log');

    const chats = await alice.getChats(demo);
    check.list(chats, 'chat', 'getchats');
    check.list(await alice.getChats({ ...demo, show_closed: true }), 'chat', 'getchats(show_closed)');
    check.list(await alice.getChatHistory({ chat_id: chats.data[0]!.id }), 'chat_message', 'getchathistory');
    const made = await alice.newChat({ ...demo, subject: 'spec objects', desc: '<p>fields</p>' });
    check.object(made, 'chat', 'newchat');
    check.object(await alice.updateChat({ chat_id: made.id, subject: 'spec objects, renamed' }), 'chat', 'updatechat');
    check.object(await bob.joinChat({ chat_id: made.id }), 'chat_sub', 'joinchat');
    const [success, user] = await alice.deleteChat({ chat_id: made.id, extended: true });
    check.object(success, 'success', 'deletechat(extended)[0]');
    expect(user).toMatchObject({ object: 'user', csrf_token: expect.any(String) });

    const draft = await alice.newDraft({ ...demo, draft_type: 'draft_type_post', subject: 'Spec fields', body: 'Every one.' });
    check.object(draft, 'draft', 'newdraft');
    check.object(await alice.updateDraft({ draft_id: draft.id, bcc_me: true }), 'draft', 'updatedraft');
    const attached = await alice.addAttachments({ draft_id: draft.id }, [{ filename: 'a.txt', content: 'a' }]);
    check.object(attached, 'draft', 'addattachments');
    attached.attachments!.forEach((file, index) => check.object(file, 'attachment', `addattachments.attachments[${index}]`));
    check.list(await alice.getDrafts(demo), 'draft', 'getdrafts');
    check.object(await alice.postDraft({ draft_id: draft.id }), 'message', 'postdraft');

    expect(check.problems).toEqual([]);
    // Every table was checked against some answer, and every field seen with a value (not only null).
    const tables = [...SPEC.keys()].filter((name) => !['error', 'subscription'].includes(name));
    expect(tables.filter((name) => !check.checked.has(name))).toEqual([]);
    expect([...NULLABLE].filter((field) => !check.seen.has(field))).toEqual([]);
  });

  it('on the wire: ids keep their style, and member_info carries every subscription field', async () => {
    const check = new SpecChecker(SPEC, style);
    const get = async (operation: string, params: Record<string, unknown>) => {
      const response = await call(svc, operation, params, { auth: wireAlice });
      expect(response.status, `${operation} ${response.text.slice(0, 200)}`).toBe(200);
      return parseLossless(response.text) as any;
    };
    const topics = await get('gettopics', { group_name: 'demo', limit: 100 });
    check.list(topics, 'topic', 'gettopics(demo)', 'topic list');
    check.list(await get('gettopics', { limit: 100 }), 'topic', 'gettopics()', 'topic list');
    const withFiles = topics.data.find((topic: { has_attachments: boolean }) => topic.has_attachments);
    check.list(await get('gettopic', { topic_id: String(withFiles.id) }), 'message', 'gettopic', 'topic messages');
    const messages = await get('getmessages', { group_name: 'demo' });
    check.list(messages, 'message', 'getmessages', 'group messages');
    check.list(await get('searcharchives', { group_name: 'demo' }), 'message', 'searcharchives');
    check.list(await get('getactivitylog', { group_name: 'demo' }), 'activity_log', 'getactivitylog', 'activity log');
    const chats = await get('getchats', { group_name: 'demo' });
    check.list(chats, 'chat', 'getchats');
    check.list(await get('getchathistory', { chat_id: String(chats.data[0].id) }), 'chat_message', 'getchathistory');
    const draft = await call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' }, { method: 'POST', auth: wireAlice });
    check.object(parseLossless(draft.text), 'draft', 'newdraft');
    check.list(await get('getdrafts', { group_name: 'demo' }), 'draft', 'getdrafts');
    // The spec gives member_info "the same fields" as a subscription, and no operation answers a bare one.
    messages.sub_data.forEach((info: unknown, i: number) => check.object(info, 'subscription', `sub_data[${i}]`, 'member_info'));
    const refused = await call(svc, 'gettopic', { topic_id: 'no-such-topic' }, { auth: wireAlice });
    check.object(parseLossless(refused.text), 'error', 'gettopic(unknown)');
    expect(check.problems).toEqual([]);
  });
});

/** Item 19: what the list members describe when a list spans topics or groups (docs/protocol.md). */
describe('the group and topic that lists carry', () => {
  let svc: TestService;
  let bob: Session;
  let dave: Session;

  beforeAll(async () => {
    svc = await startTestService();
    [bob, dave] = await Promise.all([loginAs(svc, 'bob'), loginAs(svc, 'dave')]);
    await admin(svc, 'groups', { name: 'second', members: [{ email: 'bob@example.com', role: 'member' }] });
    await admin(svc, 'topics', { group: 'second', user: 'bob@example.com', subject: 'Newest, in second', body: 'hi' });
    await admin(svc, 'groups', { name: 'quiet', members: [{ email: 'bob@example.com', role: 'member' }] });
  });
  afterAll(async () => svc?.close());

  it('gettopics without a group: the group of the page\'s first topic, and its perms', async () => {
    const newest = ok(await call(svc, 'gettopics', { limit: 1 }, { auth: bob }));
    expect(newest.data[0].subject).toBe('Newest, in second');
    expect(newest.group).toMatchObject({ object: 'group', name: 'second' });
    expect(newest.group_perms).toEqual(newest.group.perms);
    const oldest = ok(await call(svc, 'gettopics', { limit: 1, sort_dir: 'asc' }, { auth: bob }));
    expect(oldest.group.name).toBe('demo');
    expect(oldest.data[0].group_id).toBe(oldest.group.id);
    // The caller's set is empty (dave is banned from demo): nothing to describe.
    const none = ok(await call(svc, 'gettopics', {}, { auth: dave }));
    expect(none).toMatchObject({ total_count: 0, group: null, group_perms: null, sub_data: [] });
  });

  it('getmessages: the topic of the page\'s first message; null only for a group without topics', async () => {
    for (const sort_dir of ['asc', 'desc']) {
      const page = ok(await call(svc, 'getmessages', { group_name: 'demo', limit: 2, sort_dir }, { auth: bob }));
      expect(page.topic).toMatchObject({ object: 'topic', id: page.data[0].topic_id });
    }
    const quiet = ok(await call(svc, 'getmessages', { group_name: 'quiet' }, { auth: bob }));
    expect(quiet).toMatchObject({ total_count: 0, topic: null, group: { name: 'quiet' } });
  });
});

/**
 * The client's types (src/api/types.ts) declare every field of the spec's tables, so users of the
 * client see them. Read with the TypeScript parser: interfaces and what they extend.
 */
describe('the client types', () => {
  const INTERFACES: Record<string, string> = {
    success: 'Success', error: 'ErrorObject', list: 'List', perms: 'Perms', subscription: 'Subscription',
    member_info: 'MemberInfo', group: 'Group', topic: 'Topic', hashtag: 'Hashtag', message: 'Message',
    attachment: 'MessageAttachment', activity_log: 'ActivityLogEntry', chat: 'Chat', chat_sub: 'ChatSub',
    chat_message: 'ChatMessage', draft: 'Draft', 'topic list': 'TopicList', 'topic messages': 'MessageList',
    'group messages': 'MessageList', 'activity log': 'List',
  };

  it('name every table of the spec', () => {
    expect([...SPEC.keys()].filter((name) => !(name in INTERFACES))).toEqual([]);
  });

  it('declare every field of each table', () => {
    const members = interfaceMembers(new URL('../src/api/types.ts', import.meta.url));
    const missing: string[] = [];
    for (const [table, name] of Object.entries(INTERFACES)) {
      const declared = members(name);
      for (const field of SPEC.get(table)?.fields.keys() ?? []) if (!declared.has(field)) missing.push(`${name}.${field}`);
    }
    expect(missing).toEqual([]);
  });
});

/** The member names of an interface of a file, with those of the interfaces it extends (same file). */
function interfaceMembers(file: URL): (name: string) => Set<string> {
  const source = ts.createSourceFile('types.ts', readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const interfaces = new Map<string, ts.InterfaceDeclaration>();
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node)) interfaces.set(node.name.text, node);
  });
  const membersOf = (name: string): Set<string> => {
    const node = interfaces.get(name);
    if (!node) return new Set();
    const names = new Set(node.members.flatMap((m) => (m.name && ts.isIdentifier(m.name) ? [m.name.text] : [])));
    for (const clause of node.heritageClauses ?? []) {
      for (const type of clause.types) if (ts.isIdentifier(type.expression)) membersOf(type.expression.text).forEach((n) => names.add(n));
    }
    return names;
  };
  return membersOf;
}
