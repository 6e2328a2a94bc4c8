import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSafeNumber, parse as parseLossless } from 'lossless-json';
import { parseWireJson, type GroupsClient } from '../src/api/index.js';
import { Clients, closeSocket, collectFrames, idValues } from './helpers/client.js';
import { call, loginAs, startTestService, type TestService } from './helpers/service.js';

const TWO_53 = 2n ** 53n;

/** Sends every kind of id back: a reply draft to a message, a chat's join, history, socket and leave. */
async function roundTrip(client: GroupsClient, owner: GroupsClient) {
  const messages = await client.getMessages({ group_name: 'demo', limit: 100 });
  const original = messages.data.find((message) => message.subject.startsWith('How do I write a bot'))!;
  const reply = await client.newDraft({ group_name: 'demo', draft_type: 'draft_type_reply', message_id: original.id, body: 'a reply' });
  expect(reply.message_id).toBe(original.id);
  const posted = await client.postDraft({ draft_id: reply.id });
  expect(posted.topic_id).toBe(original.topic_id);
  const topic = await client.getTopic({ topic_id: original.topic_id, limit: 100 });
  expect(topic.topic?.id).toBe(original.topic_id);
  expect(topic.data.map((message) => message.id)).toContain(posted.id);

  const chat = await owner.newChat({ group_name: 'demo', subject: 'ids', desc: '' });
  expect((await owner.updateChat({ chat_id: chat.id, desc: 'described' })).id).toBe(chat.id);
  const sub = await client.joinChat({ chat_id: chat.id });
  expect(sub.chat_id).toBe(chat.id);
  const ws = await client.openChatSocket({ chatsubId: sub.id });
  const ownerWs = await owner.openChatSocket({ chatsubId: chat.chat_sub!.id });
  const ownerFrames = collectFrames(ownerWs);
  ws.send(JSON.stringify({ object: 'chat_post', message: 'from the client' }));
  const [received] = await ownerFrames.waitFor(1);
  expect(received).toMatchObject({ object: 'chat_message', message: 'from the client', chat_id: chat.id, user_id: sub.user_id });
  const history = await owner.getChatHistory({ chat_id: chat.id });
  const mine = await client.getChatHistory({ chat_id: chat.id });
  expect(mine.data.map((message) => message.id)).toEqual([received.id]);
  expect(history.data.map((message) => message.id)).toEqual([received.id]);
  await Promise.all([closeSocket(ws), closeSocket(ownerWs)]);
  expect(await client.leaveChat({ chatsub_id: sub.id })).toBeUndefined();
  expect(await owner.deleteChat({ chat_id: chat.id })).toBeUndefined();
  return { posted };
}

describe('ids in the big style (integers above 2^53)', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  beforeAll(async () => {
    svc = await startTestService({ idStyle: 'big' });
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
  });

  it('every id of a result is the exact digit string of the wire', async () => {
    const bob = clients.make('bob');
    const raw = await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: await loginAs(svc, 'bob') });
    const result = await bob.getChats({ group_name: 'demo', limit: 100 });
    const ours = idValues(result);
    const theirs = idValues(raw.body);
    expect(ours.length).toBeGreaterThan(8);
    expect(ours.map(({ path }) => path)).toEqual(theirs.map(({ path }) => path));
    ours.forEach(({ path, value }, index) => {
      expect(typeof value, path).toBe('string');
      expect(value).toBe(String(theirs[index]!.value));
      if (value === '0') return; // an unset id
      expect(value).toMatch(/^\d+$/);
      expect(BigInt(value as string) > TWO_53).toBe(true);
      expect(raw.text).toContain(`"${path.split('.').pop()}":${value as string}`);
    });
    const user = await bob.login();
    expect(BigInt(user.id) > TWO_53).toBe(true);
  });

  it('ids go back exactly: topics, reply drafts, chats, chat_subs and the socket', async () => {
    const { posted } = await roundTrip(clients.make('bob'), clients.make('alice'));
    for (const { path, value } of idValues(posted)) {
      if (value !== '0') expect(BigInt(value as string) > TWO_53, path).toBe(true);
    }
  });

  it('page tokens page through the list', async () => {
    const bob = clients.make('bob');
    const all = await bob.paginate('getmessages', { group_name: 'demo', limit: 2 }).all();
    const once = await bob.getMessages({ group_name: 'demo', limit: 100 });
    expect(all).toEqual(once.data);
  });
});

describe('ids in the opaque style (strings up to 255 characters)', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  beforeAll(async () => {
    svc = await startTestService({ idStyle: 'opaque' });
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
  });

  it('255-character ids with +/=&% round-trip: every topic_id through gettopic', async () => {
    const bob = clients.make('bob');
    const topics = await bob.getTopics({ group_name: 'demo' });
    const ids = idValues(topics).map(({ value }) => value as string);
    expect(ids.some((id) => id.length === 255)).toBe(true);
    expect(ids.some((id) => /[+/=&%]/.test(id))).toBe(true);
    for (const topic of topics.data) {
      const read = await bob.getTopic({ topic_id: topic.id });
      expect(read.topic?.id).toBe(topic.id);
      expect(read.data.every((message) => message.topic_id === topic.id)).toBe(true);
    }
    await roundTrip(bob, clients.make('alice'));
  });

  it('attachment download_urls fetch with the client\'s auth headers', async () => {
    const carol = clients.make('carol');
    const messages = await carol.getMessages({ group_name: 'demo', limit: 100 });
    const attachments = messages.data.flatMap((message) => message.attachments);
    expect(attachments.map((a) => a.filename).sort()).toEqual(['agenda.png', 'bot-notes.txt']);
    const notes = attachments.find((a) => a.filename === 'bot-notes.txt')!;
    const answer = await request(notes.download_url, { dispatcher: svc.dispatcher, headers: carol.authHeaders() });
    expect(answer.statusCode).toBe(200);
    expect(await answer.body.text()).toBe('A plugin is (ctx, next) => ...\n');
    const anonymous = await request(notes.download_url, { dispatcher: svc.dispatcher });
    expect(anonymous.statusCode).not.toBe(200);
    await anonymous.body.dump();

    const bytes = Buffer.from(Array.from({ length: 256 }, (_, index) => index));
    const draft = await carol.newDraft({ group_name: 'demo', draft_type: 'draft_type_post', subject: 'bytes', body: 'b' });
    const attached = await carol.addAttachments({ draft_id: draft.id }, [{ filename: 'all bytes.bin', content: bytes }]);
    const file = await request(attached.attachments![0]!.download_url, { dispatcher: svc.dispatcher, headers: carol.authHeaders() });
    expect(file.statusCode).toBe(200);
    expect(Buffer.from(await file.body.arrayBuffer())).toEqual(bytes);
  });
});

describe('parseWireJson', () => {
  it('keeps every digit of integers above 2^53, under id keys and others', () => {
    const parsed = parseWireJson(
      '{"id":9007199254740993,"group_id":123456789012345678901234567890,"count":9007199254740995,"neg":-9007199254740997,' +
      '"list":[18446744073709551615],"next_page_token":36028797018963971}',
    );
    expect(parsed).toEqual({
      id: '9007199254740993', group_id: '123456789012345678901234567890', count: '9007199254740995', neg: '-9007199254740997',
      list: ['18446744073709551615'], next_page_token: '36028797018963971',
    });
  });

  it('turns small ids into strings and leaves other numbers alone (with and without long numbers)', () => {
    const small = '{"id":5,"user_id":0,"next_page_token":12,"msg_num":3,"ratio":0.5,"total_count":7,"sub":{"chat_id":44}}';
    const expected = { id: '5', user_id: '0', next_page_token: '12', msg_num: 3, ratio: 0.5, total_count: 7, sub: { chat_id: '44' } };
    expect(parseWireJson(small)).toEqual(expected);
    const withLong = small.replace('{', '{"big_id":12345678901234567890,');
    expect(parseWireJson(withLong)).toEqual({ big_id: '12345678901234567890', ...expected });
    expect(parseWireJson('{"id":1,"score":-1.25e3,"flag":true,"none":null}')).toEqual({ id: '1', score: -1250, flag: true, none: null });
  });

  it('leaves strings holding long digit runs unharmed', () => {
    const text = '{"message":"call 123456789012345678901234 or :98765432109876543210","id":"00012345678901234567"}';
    expect(parseWireJson(text)).toEqual({ message: 'call 123456789012345678901234 or :98765432109876543210', id: '00012345678901234567' });
    expect(parseWireJson('["x,12345678901234567890"]')).toEqual(['x,12345678901234567890']);
  });

  it('throws a SyntaxError for text that is not JSON (the transport turns it into ResponseFormatError)', () => {
    expect(() => parseWireJson('<html>')).toThrow(SyntaxError);
  });

  // The lossless path (taken when a payload holds a long integer) keeps floats numbers, as JSON.parse does.
  it('long integers are found outside strings only, whole numbers only, at any depth', () => {
    const text = '{"note":"say \\"12345678901234567890\\" twice","list":[-12345678901234567890,1e300,12345678901234567.5e2],' +
      '"nested":{"chat_id":7,"count":9007199254740993,"safe":1000000000000000}}';
    expect(parseWireJson(text)).toEqual({
      note: 'say "12345678901234567890" twice',
      list: ['-12345678901234567890', 1e300, 12345678901234567.5e2],
      nested: { chat_id: '7', count: '9007199254740993', safe: 1000000000000000 },
    });
  });

  it('a precise float stays a number whatever else the payload holds', () => {
    expect(parseWireJson('{"score":0.1234567890123456789}')).toEqual({ score: 0.1234567890123456789 });
    expect(parseWireJson('{"id":12345678901234567890,"score":0.1234567890123456789}')).toEqual({
      id: '12345678901234567890', score: 0.1234567890123456789,
    });
  });

  it('finds a 16-digit integer above 2^53 wherever it starts (the scan looks at every 16th character)', () => {
    for (let pad = 0; pad < 40; pad += 1) {
      for (const value of ['9007199254740993', '-9007199254740993', '12345678901234567']) {
        expect(parseWireJson(`{"a":${' '.repeat(pad)}${value},"b":"${'x'.repeat(pad % 17)}"}`)).toEqual({ a: value, b: 'x'.repeat(pad % 17) });
      }
    }
  });

  it('agrees with a lossless JSON parser on generated payloads: boundary integers, long runs in strings, escapes, whitespace', () => {
    // A seeded generator: the same payloads every run, thousands of them.
    let seed = 12345;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const digits = (n: number) => Array.from({ length: n }, (_, i) => (i === 0 ? 1 + Math.floor(random() * 9) : Math.floor(random() * 10))).join('');
    const integers = ['9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740991', '-9007199254740993', '1000000000000000', '9999999999999999', '0', '-0'];
    const number = () => pick([() => pick(integers), () => digits(1 + Math.floor(random() * 25)), () => `-${digits(15 + Math.floor(random() * 5))}`,
      () => `${digits(17)}.${digits(3)}`, () => `${digits(16)}e${Math.floor(random() * 5)}`, () => `${digits(18)}E-2`])();
    // String contents as JSON source: escaped quotes and backslashes next to digit runs, and a run that looks like a number.
    const text = () => pick(['', digits(20), `a\\"${digits(17)}\\"`, '\\\\', `:${digits(16)},`, 'plain']);
    const string = () => `"${text()}${pick(['', '\\\\', '\\"', digits(16)])}"`;
    const space = () => pick(['', ' ', '\n ']);
    const value = (depth: number): string => {
      const kind = depth > 2 ? pick(['n', 's']) : pick(['n', 's', 'a', 'o']);
      if (kind === 'n') return number();
      if (kind === 's') return string();
      const count = Math.floor(random() * 4);
      if (kind === 'a') return `[${Array.from({ length: count }, () => `${space()}${value(depth + 1)}${space()}`).join(',')}]`;
      return `{${Array.from({ length: count }, (_, i) => `${space()}"k${i}":${space()}${value(depth + 1)}`).join(',')}}`;
    };
    const lossless = (payload: string) => parseLossless(payload, null, (raw: string) =>
      (/^-?\d+$/.test(raw) && !isSafeNumber(raw) ? raw : Number(raw)));
    let withLongIntegers = 0;
    for (let i = 0; i < 3_000; i += 1) {
      const payload = value(0);
      const expected = lossless(payload);
      expect(parseWireJson(payload), payload).toEqual(expected);
      if (JSON.stringify(expected) !== JSON.stringify(JSON.parse(payload))) withLongIntegers += 1;
    }
    // The generator is worth its name: a good share of the payloads hold integers a double cannot.
    expect(withLongIntegers).toBeGreaterThan(300);
  });
});
