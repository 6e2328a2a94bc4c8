import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFor, outputs, PASSWORDS, runCli, succeeded } from './helpers/cli.js';
import { admin, call, loginAs, ok, parseJson, startTestService, type TestService } from './helpers/service.js';

const TWO_TO_53 = 2n ** 53n;

/** A chat of bob's with 250 messages ("m 1" to "m 250"), for paging through. */
async function bulkChat(svc: TestService): Promise<string> {
  const chat = ok(await admin(svc, 'chats', { group: 'demo', owner: 'mo@example.com', subject: 'bulk', members: ['bob@example.com'] }));
  ok(await admin(svc, 'chats/messages', { chat: 'bulk', group: 'demo', user: 'bob@example.com', message: 'm {n}', count: 250 }));
  return String(chat.id);
}

function expectAllHistory(items: Array<{ object: string; message: string; msg_num: number }>): void {
  expect(items).toHaveLength(250);
  // Newest first (getchathistory's default order), nothing repeated or skipped across pages.
  expect(items.map((m) => m.message)).toEqual(Array.from({ length: 250 }, (_, i) => `m ${250 - i}`));
}

describe('groupwire api with ids above 2^53', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ idStyle: 'big' });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('prints every id exactly as the service sent it, unquoted', async () => {
    const out = succeeded(await runCli(['api', 'getchats', '--group_name', 'demo'], envFor(svc, 'bob')));
    const raw = (await call(svc, 'getchats', { group_name: 'demo' }, { auth: await loginAs(svc, 'bob') })).text;
    const ids = [...raw.matchAll(/"(\w*id)":(\d+)/g)];
    expect(ids.length).toBeGreaterThan(4);
    // Some are beyond what a double holds: JSON.parse would have changed their digits.
    expect(ids.some(([, , digits]) => BigInt(digits!) > TWO_TO_53 && String(Number(digits)) !== digits)).toBe(true);
    for (const [, key, digits] of ids) expect(out).toContain(`"${key}": ${digits}`);
    // The whole answer, reindented: the same JSON text as the service's, number for number.
    expect(out).toBe(`${stringifyLossless(parseLossless(raw), undefined, 2)}\n`);
  });

  it('--all pages through 250 chat messages, sending each page token back exactly', async () => {
    const chatId = await bulkChat(svc);
    expect(BigInt(chatId) > TWO_TO_53).toBe(true);
    const out = succeeded(await runCli(['api', 'getchathistory', '--chat_id', chatId, '--limit', '30', '--all'], envFor(svc, 'bob')));
    const items = parseJson(out);
    expectAllHistory(items);
    const ids = items.map((m: { id: string }) => m.id);
    expect(new Set(ids).size).toBe(250);
    expect(ids.every((id: unknown) => typeof id === 'string' && BigInt(id) > TWO_TO_53)).toBe(true);
    // The first page, fetched directly, holds the same ids as the start of the array.
    const page = ok(await call(svc, 'getchathistory', { chat_id: chatId, limit: 30 }, { auth: await loginAs(svc, 'bob') }));
    expect(ids.slice(0, 30)).toEqual(page.data.map((m: { id: string }) => m.id));
    for (const id of ids.slice(0, 30)) expect(out).toContain(`"id": ${id}`);
  });
});

describe('groupwire api with opaque string ids', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ idStyle: 'opaque' });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('prints the 255-character ids exactly', async () => {
    const out = succeeded(await runCli(['api', 'getchats', '--group_name', 'demo'], envFor(svc, 'bob')));
    const raw = (await call(svc, 'getchats', { group_name: 'demo' }, { auth: await loginAs(svc, 'bob') })).text;
    const expected = JSON.parse(raw);
    const printed = JSON.parse(out);
    expect(printed.data.map((c: { id: string }) => c.id)).toEqual(expected.data.map((c: { id: string }) => c.id));
    const ids: string[] = [...raw.matchAll(/"(?:\w*id)":("(?:[^"\\]|\\.)*")/g)].map(([, quoted]) => JSON.parse(quoted!));
    expect(ids.some((id) => id.length === 255)).toBe(true);
    for (const id of ids) expect(out).toContain(JSON.stringify(id));
  });

  it('sends an opaque id back as given (a POST with a chat_id of 255 characters)', async () => {
    const chats = ok(await call(svc, 'getchats', { group_name: 'demo' }, { auth: await loginAs(svc, 'mo') }));
    const general = chats.data.find((c: { subject: string }) => c.subject === 'general');
    const out = succeeded(await runCli(['api', 'updatechat', '--chat_id', general.id, '--desc', 'renamed'], envFor(svc, 'mo')));
    expect(JSON.parse(out)).toMatchObject({ object: 'chat', id: general.id, desc: 'renamed' });
  });

  it('--all follows string page tokens through 250 messages (100 a page by default)', async () => {
    const chatId = await bulkChat(svc);
    const out = succeeded(await runCli(['api', 'getchathistory', `--chat_id=${chatId}`, '--all'], envFor(svc, 'bob')));
    expectAllHistory(JSON.parse(out));
  });

  it('no password appeared in any output', () => {
    for (const password of PASSWORDS) expect(outputs.join('\n')).not.toContain(password);
  });
});
