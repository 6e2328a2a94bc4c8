import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import httpApi from '../plugins/http-api/index.js';
import type { ChatMessage, GroupsClient } from '../src/api/index.js';
import { at, botsFiles } from './helpers/bots-files.js';
import { cleanEnv, runCli } from './helpers/cli.js';
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

const now = () => String(Math.floor(Date.now() / 1000));

/** The v1 signature of docs/plugins/http-api.md: HMAC-SHA256 of `v1:<ts>:<METHOD>:<path?query>:<Idempotency-Key or empty>:<body>`. */
function signatureOf(secret: string, timestamp: string, method: string, target: string, key: string, body: string): string {
  return createHmac('sha256', secret).update(`v1:${timestamp}:${method}:${target}:${key}:${body}`).digest('hex');
}

function signed(base: string, body: string, secret: string, timestamp = now()): Promise<Reply> {
  const signature = signatureOf(secret, timestamp, 'POST', '/gateways/ops/messages', '', body);
  return call(`${base}/gateways/ops/messages`, {
    method: 'POST', body, headers: { 'content-type': 'application/json', 'x-timestamp': timestamp, 'x-signature-256': `sha256=${signature}` },
  });
}

/** A POST with the headers given as they are (a signature made elsewhere, replayed or moved). */
function sendSigned(url: string, body: string, headers: Record<string, string>): Promise<Reply> {
  return call(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
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
    expect(await relayed(e, reader, 'general')).toEqual(['<[api] deploybot> build 42 passed']);

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

    const body = JSON.stringify({ text: 'signed and sealed', username: 'Alerts Bot', kind: 'message' });
    expect(await signed(base, body, HMAC_SECRET)).toMatchObject({ status: 202 });
    expect(await signed(base, body, 'some-other-secret-0123456789')).toMatchObject({ status: 401, body: { error: 'bad signature' } });
    expect(await signed(base, body, HMAC_SECRET, String(Math.floor(Date.now() / 1000) - 600))).toMatchObject({ status: 401, body: { error: expect.stringMatching(/X-Timestamp/) } });
    expect((await postAs(base, TOKEN, { text: 'waves', username: 'deploybot', kind: 'action' })).status).toBe(202);

    await waitFor('three lines in the chat', async () => (await relayed(e, reader, 'general')).length === 3);
    // Each name is marked as coming through the API; the action shows as the gateway renders actions.
    expect(await relayed(e, reader, 'general')).toEqual(['<[api] deploybot> build 42 passed', '<[api] Alerts Bot> signed and sealed', '* [api] deploybot waves']);
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
    const timestamp = now();
    const signature = signatureOf(HMAC_SECRET, timestamp, 'POST', '/gateways/ops/messages', key['idempotency-key'], body);
    const other = await call(`${base}/gateways/ops/messages`, {
      method: 'POST', body, headers: { 'content-type': 'application/json', 'x-timestamp': timestamp, 'x-signature-256': `sha256=${signature}`, ...key },
    });
    expect(other.status).toBe(202);
    expect(other.body.id).not.toBe(first.body.id);
    // Lines of a channel reach the chat in order: with this one there, a second copy would be there too.
    expect((await postAs(base, TOKEN, { text: 'the last one', username: 'cd' })).status).toBe(202);
    await waitFor('the last line', async () => (await relayed(e, reader, 'general')).includes('<[api] cd> the last one'));
    expect(await relayed(e, reader, 'general')).toEqual(['<[api] cd> deployed 42', '<[api] cd> signed once', '<[api] cd> the last one']);
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
    expect(await relayed(e, reader, 'archive')).toEqual(['<[api] cron> for the attic']);
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

describe('http-api: signed requests cannot be replayed (#31 item 6)', () => {
  const TWO_CHANNELS = { channels: { general: 'ops', archive: 'attic' } };
  const TWO_CHATS = [{ chat: 'general' }, { chat: 'archive' }];

  test('a signed POST counts once: sent again, with a new Idempotency-Key, or to another channel\'s path, it is refused (401)', async () => {
    const { e, base, reader } = await setup(TWO_CHANNELS, TWO_CHATS);
    const body = JSON.stringify({ text: 'disk 91% full on db1', username: 'alerts' });
    const timestamp = now();
    const headers = { 'x-timestamp': timestamp, 'x-signature-256': `sha256=${signatureOf(HMAC_SECRET, timestamp, 'POST', '/gateways/ops/messages', '', body)}` };
    expect(await sendSigned(`${base}/gateways/ops/messages`, body, headers)).toMatchObject({ status: 202 });

    const again = await sendSigned(`${base}/gateways/ops/messages`, body, headers);
    expect(again).toMatchObject({ status: 401, body: { error: expect.stringMatching(/already used/) } });
    for (const key of ['new-key-1', 'new-key-2', 'new-key-3']) {
      expect(await sendSigned(`${base}/gateways/ops/messages`, body, { ...headers, 'idempotency-key': key })).toMatchObject({ status: 401, body: { error: expect.stringMatching(/bad signature/) } });
    }
    expect(await sendSigned(`${base}/gateways/attic/messages`, body, headers)).toMatchObject({ status: 401, body: { error: expect.stringMatching(/bad signature/) } });
    expect(await sendSigned(`${base}/gateways/ops/messages?x=1`, body, headers)).toMatchObject({ status: 401 });

    // A line POSTed after the refused ones: once it is in the chat, any copy taken before it would be too.
    expect((await postAs(base, TOKEN, { text: 'the last one', username: 'cd' })).status).toBe(202);
    await waitFor('the last line', async () => (await relayed(e, reader, 'general')).includes('<[api] cd> the last one'));
    expect(await relayed(e, reader, 'general')).toEqual(['<[api] alerts> disk 91% full on db1', '<[api] cd> the last one']);
    expect(stats(e)).toMatchObject({ accepted: 2, intake_queued: 0 });
  });

  test('a timestamp outside the window and a v0 signature are refused; a client signing as the docs say (openssl) is taken, and its retry signed afresh with the same Idempotency-Key gets the first answer', async () => {
    const { base } = await setup();
    const body = JSON.stringify({ text: 'from the docs', username: 'alerts' });
    const stale = String(Math.floor(Date.now() / 1000) - 150);
    expect(await signed(base, body, HMAC_SECRET, stale)).toMatchObject({ status: 401, body: { error: expect.stringMatching(/X-Timestamp .*120 s/) } });
    const ahead = String(Math.floor(Date.now() / 1000) + 150);
    expect(await signed(base, body, HMAC_SECRET, ahead)).toMatchObject({ status: 401, body: { error: expect.stringMatching(/X-Timestamp/) } });

    const timestamp = now();
    const v0 = createHmac('sha256', HMAC_SECRET).update(`v0:${timestamp}:${body}`).digest('hex');
    expect(await sendSigned(`${base}/gateways/ops/messages`, body, { 'x-timestamp': timestamp, 'x-signature-256': `sha256=${v0}` }))
      .toMatchObject({ status: 401, body: { error: expect.stringMatching(/v0 .*no longer accepted/) } });

    // The shell recipe of docs/plugins/http-api.md, run as written there.
    const target = '/gateways/ops/messages';
    const key = 'disk-db1-91';
    const viaOpenssl = (ts: string) => execFileSync('sh', ['-c',
      'printf \'v1:%s:%s:%s:%s:%s\' "$ts" POST "$target" "$key" "$body" | openssl dgst -sha256 -hmac "$ALERTS_SECRET" -hex | sed \'s/^.* //\''],
    { env: { ...process.env, ts, target, key, body, ALERTS_SECRET: HMAC_SECRET } }).toString().trim();
    const first = now();
    const sig = viaOpenssl(first);
    expect(sig).toBe(signatureOf(HMAC_SECRET, first, 'POST', target, key, body));
    const taken = await sendSigned(`${base}${target}`, body, { 'x-timestamp': first, 'x-signature-256': `sha256=${sig}`, 'idempotency-key': key });
    expect(taken).toMatchObject({ status: 202 });
    // The client lost the answer and retries: a new timestamp (a second later), signed again, the same key.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const retry = await sendSigned(`${base}${target}`, body, { 'x-timestamp': now(), 'x-signature-256': `sha256=${viaOpenssl(now())}`, 'idempotency-key': key });
    expect(retry).toMatchObject({ status: 202, body: taken.body, headers: { 'idempotent-replayed': 'true' } });

    // A signed GET: the same poll again in the window is a replay too; another query parameter makes it another request.
    const poll = (target: string, ts: string) => call(`${base}${target}`, { headers: { 'x-timestamp': ts, 'x-signature-256': `sha256=${signatureOf(HMAC_SECRET, ts, 'GET', target, '', '')}` } });
    const pollAt = now();
    expect((await poll('/gateways/ops/messages?after=0', pollAt)).status).toBe(200);
    expect(await poll('/gateways/ops/messages?after=0', pollAt)).toMatchObject({ status: 401, body: { error: expect.stringMatching(/already used/) } });
    expect((await poll('/gateways/ops/messages?after=0&n=2', pollAt)).status).toBe(200);
  });
});

describe('http-api: a username is one line and marked as the API\'s (#31 item 11)', () => {
  test('a username with a line break, a control or bidi character, or over 64 characters is refused (400, field username); nothing reaches the chat', async () => {
    const { e, base, reader } = await setup();
    for (const username of ['mallory\n<alice> hi', 'mallory\r\n<alice> hi', 'bell\u0007', 'esc\u001b[2J', 'nel\u0085x', 'ls\u2028x', 'rlo\u202eecila', 'iso\u2067x', 'lrm\u200ex', 'tab\tx', 'x'.repeat(65)]) {
      const answer = await postAs(base, TOKEN, { text: 'hi', username });
      expect(answer, JSON.stringify(username)).toMatchObject({ status: 400, body: { field: 'username', error: expect.stringMatching(/^username: /) } });
    }
    expect((await postAs(base, TOKEN, { text: 'fine', username: 'Zoë Ops-Bot 🚀' })).status).toBe(202);
    await waitFor('the line in the chat', async () => (await relayed(e, reader, 'general')).length === 1);
    expect(await relayed(e, reader, 'general')).toEqual(['<[api] Zoë Ops-Bot 🚀> fine']);
    expect(stats(e)).toMatchObject({ accepted: 1 });
  });

  test('speaker_name sets the mark ({username}, {client}); without {username} it is refused by the schema', async () => {
    const { e, base, reader } = await setup({ speaker_name: '{username} via {client}' });
    expect((await postAs(base, TOKEN, { text: 'marked', username: 'deploybot' })).status).toBe(202);
    await waitFor('the line in the chat', async () => (await relayed(e, reader, 'general')).length === 1);
    expect(await relayed(e, reader, 'general')).toEqual(['<deploybot via ci> marked']);
    expect(httpApi.options.safeParse({ speaker_name: 'api' }).success).toBe(false);
    expect(httpApi.options.safeParse({ speaker_name: '{username}\n' }).success).toBe(false);
  });
});

describe('groupwire check and the HTTP API over plain HTTP (#31 item 6)', () => {
  const files = botsFiles('gw-http-api-check-');
  afterAll(() => files.remove());
  const lines = (listen: string, tls = false) => [
    'service:', '  base_url: https://gds.example', 'bots:',
    '  - name: a', '    login: { email: bot@example.com, password: pw }', '    chats:', '      - { group: demo, chat: general }',
    '    plugins:', '      - use: http-api', '        with:', `          listen: ${listen}`, '          channels: { general: ops }',
    ...(tls ? ['          tls: { cert_file: ./c.pem, key_file: ./k.pem }'] : []),
  ];

  test('off loopback without tls: valid, with a warning at listen; on loopback or with tls: no warning', async () => {
    const open = files.write(lines('{ host: 0.0.0.0, port: 8088 }'));
    const result = await runCli(['check', open], cleanEnv(), files.dir);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${open} is valid`);
    expect(result.stderr).toContain(`warning: ${at(open, lines('{ host: 0.0.0.0, port: 8088 }'), 11, '0.0.0.0')}: http-api listens on 0.0.0.0 over plain HTTP`);
    for (const quiet of [lines('{ host: 127.0.0.1, port: 8088 }'), lines('{ host: localhost }'), lines('{ host: "::1" }'), lines('{ host: 0.0.0.0 }', true)]) {
      const file = files.write(quiet);
      const ok = await runCli(['check', file], cleanEnv(), files.dir);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stderr).not.toMatch(/warning/);
    }
  });
});

/** Starts the supervisor again; answers the new port. */
async function restart(e: Env): Promise<{ port: number }> {
  await e.start({ waitConnected: false });
  return { port: await waitFor('the HTTP API listening again', () => stats(e).port) };
}
