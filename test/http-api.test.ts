import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { chatOf, history, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * http-api, messages in: a supervisor with the plugin (channel `ops` joined with the chat `general`),
 * called over real HTTP by undici as a tool would.
 */

const TOKEN = 'ci-token-0123456789abcdef';
const HMAC_SECRET = 'signer-secret-0123456789abcdef';
const LIMITED_TOKEN = 'limited-token-0123456789abcdef';

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['http-api']!;

async function setup(extra: Record<string, unknown> = {}, chats = [{ chat: 'general' }]): Promise<{ e: Env; base: string; reader: GroupsClient }> {
  const e = (env = await makeEnv([]));
  e.writeConfig([{
    chats,
    reply_rate: { per_second: 200, burst: 200 },
    closed_chat_check_seconds: 0.2,
    plugins: [{
      use: 'http-api',
      with: {
        listen: { host: '127.0.0.1', port: 0 },
        channels: { general: 'ops' },
        ...extra,
        clients: [
          { name: 'ci', token: TOKEN },
          { name: 'signer', hmac_secret: HMAC_SECRET },
          { name: 'limited', token: LIMITED_TOKEN, channels: ['elsewhere'] },
        ],
      },
    }],
  }]);
  await e.start({ waitConnected: false });
  const port = await waitFor('the HTTP API listening', () => stats(e).port);
  return { e, base: `http://127.0.0.1:${port}`, reader: e.client('bob') };
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

async function call(url: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  const answer = await request(url, { method: init.method ?? 'GET', headers: init.headers ?? {}, ...(init.body !== undefined ? { body: init.body } : {}) });
  const text = await answer.body.text();
  return { status: answer.statusCode, headers: answer.headers, body: JSON.parse(text) as Record<string, unknown> };
}

function postAs(base: string, token: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return call(`${base}/gateways/ops/messages`, {
    method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
  });
}

function signed(base: string, body: string, secret: string, timestamp = String(Math.floor(Date.now() / 1000))): Promise<Reply> {
  const signature = createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex');
  return call(`${base}/gateways/ops/messages`, {
    method: 'POST', body, headers: { 'content-type': 'application/json', 'x-timestamp': timestamp, 'x-signature-256': `sha256=${signature}` },
  });
}

/** The bot's posts in a chat (what came in over HTTP), oldest first. */
async function relayed(e: Env, reader: GroupsClient, subject: string): Promise<string[]> {
  const chat = (await chatOf(reader, subject))!;
  const bot = String((await chatOf(e.client('bot'), subject))!.chat_sub!.user_id);
  return (await history(reader, chat.id)).filter((m: ChatMessage) => String(m.user_id) === bot).map((m) => m.message);
}

describe('http-api: messages in', () => {
  test('a bearer POST is queued (202) and posted into the chat as <username> text; bad credentials 401, a bad body 400 naming the field, another channel 403; an HMAC-signed POST is taken, a bad signature refused', async () => {
    const { e, base, reader } = await setup();
    expect(await call(`${base}/health`)).toMatchObject({ status: 200, body: { ok: true } });

    const first = await postAs(base, TOKEN, { text: 'build 42 passed', username: 'deploybot' });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ id: expect.stringMatching(/^\d{13}-\d{6}$/), status: 'queued' });
    await waitFor('the line in the chat', async () => (await relayed(e, reader, 'general')).length === 1);
    expect(await relayed(e, reader, 'general')).toEqual(['<deploybot> build 42 passed']);

    const wrong = await postAs(base, 'not-the-token-at-all-0123', { text: 'nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toMatch(/token/);
    const none = await call(`${base}/gateways/ops/messages`, { method: 'POST', body: '{"text":"x"}', headers: { 'content-type': 'application/json' } });
    expect(none.status).toBe(401);

    expect(await postAs(base, TOKEN, { username: 'x' })).toMatchObject({ status: 400, body: { field: 'text' } });
    expect(await postAs(base, TOKEN, { text: 'hi', kind: 'shout' })).toMatchObject({ status: 400, body: { field: 'kind' } });
    expect(await postAs(base, TOKEN, { text: 'x'.repeat(4_001) })).toMatchObject({ status: 400, body: { field: 'text', error: expect.stringMatching(/4000/) } });
    const notJson = await call(`${base}/gateways/ops/messages`, { method: 'POST', body: '{text:', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` } });
    expect(notJson).toMatchObject({ status: 400, body: { field: 'body' } });
    expect(await postAs(base, LIMITED_TOKEN, { text: 'not my channel' })).toMatchObject({ status: 403 });
    expect(await call(`${base}/gateways/nowhere/messages`, { method: 'POST', body: '{"text":"x"}', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` } }))
      .toMatchObject({ status: 404 });

    const body = JSON.stringify({ text: 'signed and sealed', username: 'Alerts\u0007\nBot', kind: 'message' });
    expect(await signed(base, body, HMAC_SECRET)).toMatchObject({ status: 202 });
    expect(await signed(base, body, 'some-other-secret-0123456789')).toMatchObject({ status: 401, body: { error: 'bad signature' } });
    expect(await signed(base, body, HMAC_SECRET, String(Math.floor(Date.now() / 1000) - 600))).toMatchObject({ status: 401, body: { error: expect.stringMatching(/X-Timestamp/) } });
    expect((await postAs(base, TOKEN, { text: 'waves', username: 'deploybot', kind: 'action' })).status).toBe(202);

    await waitFor('three lines in the chat', async () => (await relayed(e, reader, 'general')).length === 3);
    // The bell is gone and the name is on one line; the action shows as the gateway renders actions.
    expect(await relayed(e, reader, 'general')).toEqual(['<deploybot> build 42 passed', '<Alerts Bot> signed and sealed', '* deploybot waves']);
    expect(stats(e)).toMatchObject({ accepted: 3, received: 3, refused: 4 });
  });

  test('the same Idempotency-Key twice posts once: the second answer is the first, replayed', async () => {
    const { e, base, reader } = await setup();
    const key = { 'idempotency-key': 'deploy-42-done' };
    const first = await postAs(base, TOKEN, { text: 'deployed 42', username: 'cd' }, key);
    const again = await postAs(base, TOKEN, { text: 'deployed 42', username: 'cd' }, key);
    expect(first.status).toBe(202);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    // Another client's same key is its own.
    const body = JSON.stringify({ text: 'signed once', username: 'cd' });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', HMAC_SECRET).update(`v0:${timestamp}:${body}`).digest('hex');
    const other = await call(`${base}/gateways/ops/messages`, {
      method: 'POST', body, headers: { 'content-type': 'application/json', 'x-timestamp': timestamp, 'x-signature-256': `sha256=${signature}`, ...key },
    });
    expect(other.status).toBe(202);
    expect(other.body.id).not.toBe(first.body.id);
    // Lines of a channel reach the chat in order: with this one there, a second copy would be there too.
    expect((await postAs(base, TOKEN, { text: 'the last one', username: 'cd' })).status).toBe(202);
    await waitFor('the last line', async () => (await relayed(e, reader, 'general')).includes('<cd> the last one'));
    expect(await relayed(e, reader, 'general')).toEqual(['<cd> deployed 42', '<cd> signed once', '<cd> the last one']);
    expect(stats(e)).toMatchObject({ accepted: 3, received: 3 });
    expect(await postAs(base, TOKEN, { text: 'x' }, { 'idempotency-key': 'k'.repeat(256) })).toMatchObject({ status: 400, body: { field: 'Idempotency-Key' } });
  });

  test('a message the chat will not take yet stays queued across a restart (a full queue answers 503) and is posted once the chat takes it', async () => {
    const { e, base, reader } = await setup({ channels: { general: 'ops', archive: 'attic' }, intake_max: 1 }, [{ chat: 'general' }, { chat: 'archive' }]);
    const attic = (body: unknown) => call(`${base}/gateways/attic/messages`, {
      method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    });
    // archive is a closed chat: the gateway refuses the line (PostFailedError) and the plugin keeps it.
    expect((await attic({ text: 'for the attic', username: 'cron' })).status).toBe(202);
    await waitFor('a refusal', () => (stats(e).receive_retries ?? 0) >= 1, 90_000);
    expect(stats(e)).toMatchObject({ intake_queued: 1, received: 0 });
    // intake_max is 1: the queue is full.
    const full = await attic({ text: 'one too many' });
    expect(full).toMatchObject({ status: 503, headers: { 'retry-after': '5' } });
    await e.supervisor!.stop();

    const mo = e.client('mo');
    await mo.updateChat({ chat_id: (await chatOf(mo, 'archive'))!.id, is_closed: false });
    const { port } = await restart(e);
    expect((await call(`http://127.0.0.1:${port}/gateways/attic/messages?after=0`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    await waitFor('the line in archive', async () => (await relayed(e, reader, 'archive')).length === 1, 30_000);
    expect(await relayed(e, reader, 'archive')).toEqual(['<cron> for the attic']);
    await waitFor('the queue empty', () => stats(e).intake_queued === 0);
    expect(stats(e).received).toBe(1);
  }, 120_000);

  test('a port already taken fails the plugin only: the status says so, the bot goes on', async () => {
    const blocker = createServer();
    await new Promise<void>((ready) => blocker.listen(0, '127.0.0.1', ready));
    try {
      const { port } = blocker.address() as AddressInfo;
      const e = (env = await makeEnv([]));
      e.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'http-api', with: { listen: { host: '127.0.0.1', port }, channels: { general: 'ops' } } }] }]);
      await e.start();
      const report = e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'http-api')!;
      expect(report.status.connection).toMatchObject({ state: 'failed', detail: expect.stringMatching(/EADDRINUSE|in use/) });
      expect(e.log.lines.some((line) => line.level === 50 && /HTTP API could not start/.test(String(line.msg)))).toBe(true);
      expect((await post(e.svc, 'general', 'bob', 'still here')).message).toBe('still here');
    } finally {
      await new Promise((closed) => blocker.close(closed));
    }
  });
});

/** Starts the supervisor again; answers the new port. */
async function restart(e: Env): Promise<{ port: number }> {
  await e.start({ waitConnected: false });
  return { port: await waitFor('the HTTP API listening again', () => stats(e).port) };
}
