import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  readArchive, type ActivityLogEntry, type Chat, type ChatMessage, type ChatSub, type Draft, type List, type Message,
  type MessageList, type SearchHit, type Success, type Topic, type TopicList, type User,
} from '../src/api/index.js';
import { Clients, closeSocket, collectFrames } from './helpers/client.js';
import { admin, startTestService, type TestService } from './helpers/service.js';

/** Every method of GroupsClient against the local service, with its result's shape and type. */
describe('GroupsClient calls every operation', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  let dir: string;
  beforeAll(async () => {
    svc = await startTestService();
    dir = await mkdtemp(join(tmpdir(), 'groupwire-client-calls-'));
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('login answers the user and call() reaches any operation by name', async () => {
    const bob = clients.make('bob');
    const user = await bob.login();
    expectTypeOf(user).toEqualTypeOf<User>();
    expect(user).toMatchObject({ object: 'user', email: 'bob@example.com', user_name: 'bob' });
    expect(typeof user.id).toBe('string');
    expect(typeof user.csrf_token).toBe('string');
    expect(bob.session.csrf).toBe(user.csrf_token);

    const chats = await bob.call<List<Chat>>('getchats', { group_name: 'demo', limit: 100 });
    expectTypeOf(chats).toEqualTypeOf<List<Chat>>();
    expect(chats.object).toBe('list');
    expect(chats.data.map((chat) => chat.subject).sort()).toEqual(['general', 'random']);
    await expect(bob.call('nosuchop')).rejects.toThrow(TypeError);
  });

  it('reads the activity log, topics (with and without a group), one topic, messages and search', async () => {
    const alice = clients.make('alice');
    const log = await alice.getActivityLog({ group_name: 'demo', limit: 5 });
    expectTypeOf(log).toEqualTypeOf<List<ActivityLogEntry>>();
    expect(log.data).toHaveLength(5);
    expect(log.data[0]).toMatchObject({ object: 'activity_log', group_id: expect.any(String), entry: expect.any(String) });

    const everywhere = await alice.getTopics();
    expectTypeOf(everywhere).toEqualTypeOf<TopicList>();
    expect(everywhere.total_count).toBe(4);
    expect(everywhere.group).toMatchObject({ object: 'group', name: 'demo' });
    const topics = await alice.getTopics({ group_name: 'demo', sort_field: 'created', sort_dir: 'asc' });
    expect(topics.group).toMatchObject({ object: 'group', name: 'demo' });
    expect(topics.group_perms).toMatchObject({ object: 'perms' });
    expect(topics.data.map((topic) => topic.subject)).toEqual([
      'Welcome to the demo group #announce', 'How do I write a bot? #help #bots', 'Meeting notes', 'Release planning #announce',
    ]);

    const bots = topics.data[1]!;
    const topic = await alice.getTopic({ topic_id: bots.id });
    expectTypeOf(topic).toEqualTypeOf<MessageList>();
    expect(topic.topic?.id).toBe(bots.id);
    expect(topic.data).toHaveLength(3);
    expect(topic.data.every((message) => message.topic_id === bots.id && message.object === 'message')).toBe(true);

    const messages = await alice.getMessages({ group_name: 'demo', limit: 100 });
    expectTypeOf(messages).toEqualTypeOf<MessageList>();
    expect(messages.total_count).toBe(8);
    expect(messages.topic?.id).toBe(messages.data[0]!.topic_id);

    const hits = await alice.searchArchives({ group_name: 'demo', q: 'relay' });
    expectTypeOf(hits).toEqualTypeOf<List<SearchHit>>();
    expect(hits.query).toBe('relay');
    expect(hits.data).toHaveLength(2);
    expect(hits.data[0]).toMatchObject({ object: 'message', num_matches: 1, summary: expect.stringMatching(/relay/i) });
  });

  it('creates, updates, lists, joins, reads, leaves and deletes a chat', async () => {
    const alice = clients.make('alice');
    const bob = clients.make('bob');
    const chat = await alice.newChat({ group_name: 'demo', subject: 'calls', desc: '<p>for the client test</p>' });
    expectTypeOf(chat).toEqualTypeOf<Chat>();
    expect(chat).toMatchObject({ object: 'chat', subject: 'calls', is_closed: false, user_id: alice.session.user!.id });

    const updated = await alice.updateChat({ chat_id: chat.id, subject: 'calls renamed' });
    expectTypeOf(updated).toEqualTypeOf<Chat>();
    expect(updated).toMatchObject({ id: chat.id, subject: 'calls renamed' });

    const listed = await bob.getChats({ group_name: 'demo', limit: 100 });
    expectTypeOf(listed).toEqualTypeOf<List<Chat>>();
    const seen = listed.data.find((c) => c.id === chat.id);
    expect(seen).toMatchObject({ subject: 'calls renamed', chat_sub: null });

    const sub = await bob.joinChat({ chat_id: chat.id });
    expectTypeOf(sub).toEqualTypeOf<ChatSub>();
    expect(sub).toMatchObject({ object: 'chat_sub', chat_id: chat.id, user_id: bob.session.user!.id });

    await admin(svc, 'chats/messages', { chat: chat.id, user: 'alice@example.com', message: 'line {n}', count: 3 });
    const history = await bob.getChatHistory({ chat_id: chat.id, sort_dir: 'asc' });
    expectTypeOf(history).toEqualTypeOf<List<ChatMessage>>();
    expect(history.data.map((m) => [m.msg_num, m.message, m.type])).toEqual([
      [1, 'line 1', 'chat_msg_type_normal'], [2, 'line 2', 'chat_msg_type_normal'], [3, 'line 3', 'chat_msg_type_normal'],
    ]);

    const left = await bob.leaveChat({ chatsub_id: sub.id });
    expectTypeOf(left).toEqualTypeOf<Success | undefined>();
    expect(left).toBeUndefined();
    const deleted = await alice.deleteChat({ chat_id: chat.id, extended: true });
    expectTypeOf(deleted).toEqualTypeOf<[Success | undefined, User]>();
    expect(deleted[0]).toEqual({ object: 'success', extra: '' });
    expect(deleted[1].email).toBe('alice@example.com');
    const after = await alice.getChats({ group_name: 'demo', limit: 100 });
    expect(after.data.some((c) => c.id === chat.id)).toBe(false);
  });

  it('types extended results as [result, user]', async () => {
    const bob = clients.make('bob');
    const extended = await bob.getChats({ group_name: 'demo', extended: true });
    expectTypeOf(extended).toEqualTypeOf<[List<Chat>, User]>();
    // Type-level only: the functions are never called.
    expectTypeOf(() => bob.getChats({ group_name: 'demo' })).returns.resolves.toEqualTypeOf<List<Chat>>();
    expectTypeOf(() => bob.getTopic({ topic_id: '1', extended: true })).returns.resolves.toEqualTypeOf<[MessageList, User]>();
    expectTypeOf(() => bob.getTopics()).returns.resolves.toEqualTypeOf<TopicList>();
    const [list, user] = extended;
    expect(list.object).toBe('list');
    expect(user).toMatchObject({ object: 'user', email: 'bob@example.com', csrf_token: bob.session.csrf });
  });

  it('writes, attaches (Buffer and string), lists, posts and deletes drafts', async () => {
    const bob = clients.make('bob');
    const draft = await bob.newDraft({ group_name: 'demo', draft_type: 'draft_type_post', subject: 'From the client', body: 'first' });
    expectTypeOf(draft).toEqualTypeOf<Draft>();
    expect(draft).toMatchObject({ object: 'draft', draft_type: 'draft_type_post', subject: 'From the client', body: 'first' });

    const updated = await bob.updateDraft({ draft_id: draft.id, body: 'second version', bcc_me: true });
    expect(updated).toMatchObject({ id: draft.id, body: 'second version', bcc_me: true });

    const binary = Buffer.from([0, 1, 2, 250, 251, 252]);
    const attached = await bob.addAttachments({ draft_id: draft.id }, [
      { filename: 'bytes.bin', content: binary, mediaType: 'application/octet-stream' },
      { filename: 'note.txt', content: 'plain text ✓', mediaType: 'text/plain' },
    ]);
    expectTypeOf(attached).toEqualTypeOf<Draft>();
    expect(attached.num_attachments).toBe(2);
    expect(attached.attachments?.map((a) => [a.filename, a.media_type])).toEqual([
      ['bytes.bin', 'application/octet-stream'], ['note.txt', 'text/plain'],
    ]);
    expect(() => bob.addAttachments({ draft_id: draft.id }, [])).toThrow(RangeError);

    const other = await bob.newDraft({ group_name: 'demo', draft_type: 'draft_type_post', subject: 'to delete', body: 'x' });
    const drafts = await bob.getDrafts({ group_name: 'demo' });
    expectTypeOf(drafts).toEqualTypeOf<List<Draft>>();
    expect(drafts.data.map((d) => d.id).sort()).toEqual([draft.id, other.id].sort());
    expect(await bob.deleteDraft({ draft_id: other.id })).toBeUndefined();

    const message = await bob.postDraft({ draft_id: draft.id });
    expectTypeOf(message).toEqualTypeOf<Message>();
    expect(message).toMatchObject({ object: 'message', subject: 'From the client', body: 'second version' });
    expect(message.attachments.map((a) => a.filename)).toEqual(['bytes.bin', 'note.txt']);
    const everyDraft = await bob.getDrafts();
    expect(everyDraft.data).toEqual([]);
  });

  it('downloads the archive and reads it back', async () => {
    const carol = clients.make('carol');
    const out = join(dir, 'demo.zip');
    const result = await carol.downloadArchives({ group_name: 'demo' }, { out });
    expect(result.file).toBe(out);
    expect(result.bytes).toBe((await stat(out)).size);
    const messages = await carol.getMessages({ group_name: 'demo', limit: 100 });
    const read = [];
    for await (const message of readArchive(out)) read.push(message);
    expect(read.map((m) => m.headers['x-msg-num'])).toEqual(
      messages.data.map((m) => String(m.msg_num)).sort((a, b) => Number(a) - Number(b)),
    );
    expect(read[0]!.body).toBe('Welcome! This group is a sandbox for groupwire.\nFrom here you can try bots safely.');
  });

  it('opens the chat socket of a chat_sub and paginates any list', async () => {
    const carol = clients.make('carol');
    const chats = await carol.getChats({ group_name: 'demo' });
    const random = chats.data.find((c) => c.subject === 'random')!;
    const ws = await carol.openChatSocket({ chatsubId: random.chat_sub!.id });
    const frames = collectFrames(ws);
    const [first] = await frames.waitFor(1);
    expect(first).toMatchObject({ object: 'chat_message', message: 'Post your cat pictures here.', chat_id: random.id });
    await closeSocket(ws);

    // Four seeded topics and the one the drafts test posted.
    const { total_count: total } = await carol.getTopics({ group_name: 'demo' });
    expect(total).toBe(5);
    const pager = carol.paginate<Topic>('gettopics', { group_name: 'demo', limit: 2 });
    const pages = [];
    for await (const page of pager.pages()) pages.push(page.data.length);
    expect(pages).toEqual([2, 2, 1]);
    const subjects = (await pager.all()).map((topic) => topic.subject);
    expectTypeOf(subjects).toEqualTypeOf<string[]>();
    expect(new Set(subjects).size).toBe(total);
  });
});
