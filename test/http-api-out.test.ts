import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pino from 'pino';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import httpApi from '../plugins/http-api/index.js';
import { FILE_STORAGE, type OutgoingMessage, type PluginEnv, type PluginInstance } from '../src/index.js';
import { localTls } from '../src/service/tls.js';
import { KeyValueStore } from '../src/store/kv-store.js';
import { freePort } from './helpers/ports.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';
import { WebhookReceiver, type Behaviour } from './helpers/webhook-receiver.js';

/**
 * http-api, lines out: chat lines of `general` (joined with the channel `ops`) to webhook receivers on
 * real node:http servers (test/helpers/webhook-receiver.ts) and to event-stream clients reading the
 * stream by hand over undici.
 */

const TOKEN = 'reader-token-0123456789abcdef';
const WEBHOOK_SECRET = 'webhook-secret-0123456789abcdef';

let env: Env | undefined;
const receivers: WebhookReceiver[] = [];
const streams: SseClient[] = [];
afterEach(async () => {
  for (const stream of streams.splice(0)) stream.close();
  await env?.close();
  for (const receiver of receivers.splice(0)) await receiver.close();
  env = undefined;
});

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['http-api']!;
const dataDir = (e: Env) => join(e.stateDir, 'bots', 'bot0', 'plugins', 'http-api');

async function receiver(script: Behaviour[] = [], then: Behaviour = 200): Promise<WebhookReceiver> {
  const made = await WebhookReceiver.start(WEBHOOK_SECRET, script, then);
  receivers.push(made);
  return made;
}

async function setup(extra: Record<string, unknown> = {}): Promise<{ e: Env; base: string }> {
  const e = (env = await makeEnv([]));
  e.writeConfig([{
    chats: [{ chat: 'general' }],
    plugins: [{
      use: 'http-api',
      with: { listen: { host: '127.0.0.1', port: 0 }, channels: { general: 'ops' }, clients: [{ name: 'reader', token: TOKEN }], retry_min_ms: 50, retry_max_ms: 400, ...extra },
    }],
  }]);
  await e.start();
  const port = await waitFor('the HTTP API listening', () => stats(e).port);
  return { e, base: `http://127.0.0.1:${port}` };
}

/**
 * The garbage collector, called by hand: a long-running bot collects garbage all the time, and a timeout
 * signal nothing holds on to may be collected before it fires (#31 item 8); a test must do the same.
 */
function exposedGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

const said = (lines: Array<Record<string, unknown>>) => lines.map((line) => `${(line.speaker as { name: string }).name}: ${String(line.text)}`);

/** A server-sent event as the client parsed it. */
interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** An event-stream client, parsing text/event-stream by hand (as the WHATWG spec says) from undici's body stream. */
class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  private readonly stopper = new AbortController();

  static async open(url: string, headers: Record<string, string> = {}, dispatcher?: Agent): Promise<SseClient> {
    const client = new SseClient();
    streams.push(client);
    const answer = await request(url, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${TOKEN}`, ...headers }, signal: client.stopper.signal, ...(dispatcher ? { dispatcher } : {}),
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
    let connected!: () => void;
    const ready = new Promise<void>((resolve) => (connected = resolve));
    void (async () => {
      let buffer = '';
      try {
        for await (const chunk of answer.body) {
          buffer += (chunk as Buffer).toString('utf8');
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (block === ':connected') connected();
            const event: SseEvent = { event: 'message', data: '' };
            let fields = 0;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) {
                client.comments.push(line);
                continue;
              }
              const [name, ...rest] = line.split(':');
              const value = rest.join(':').replace(/^ /, '');
              fields += 1;
              if (name === 'id') event.id = value;
              else if (name === 'event') event.event = value;
              else if (name === 'data') event.data += event.data === '' ? value : `\n${value}`;
            }
            if (fields > 0) client.events.push(event);
          }
        }
      } catch {
        // Closed by the test.
      }
    })();
    await ready;
    return client;
  }

  messages(): string[] {
    return this.events.filter((e) => e.event === 'message').map((e) => `${e.id} ${(JSON.parse(e.data) as { text: string }).text}`);
  }

  close(): void {
    this.stopper.abort();
  }
}

describe('http-api: lines out', () => {
  test('a webhook answering 500 three times, then not at all once, then 200: every line arrives once, in order, signed, with its Idempotency-Key', async () => {
    const hook = await receiver([500, 500, 500, 'hang']);
    const { e } = await setup({ webhooks: [{ url: hook.url, secret: WEBHOOK_SECRET, timeout_ms: 500 }] });
    for (let n = 1; n <= 3; n += 1) await post(e.svc, 'general', 'bob', `line ${n} @everyone`);
    await waitFor('three lines accepted', () => hook.lines.length === 3);
    expect(said(hook.lines)).toEqual([1, 2, 3].map((n) => `Bob Member: line ${n} @\u200beveryone`));
    expect(hook.received.map((r) => r.answered)).toEqual([500, 500, 500, 'hang', 200, 200, 200]);
    expect(hook.received.every((r) => r.signed)).toBe(true);
    expect(hook.received.every((r) => r.idempotencyKey === r.line.id)).toBe(true);
    // The first line was POSTed five times, always with one key; each key was accepted once.
    expect(new Set(hook.received.slice(0, 5).map((r) => r.idempotencyKey)).size).toBe(1);
    expect([...hook.accepted.values()]).toEqual([1, 1, 1]);
    expect(hook.lines[0]).toMatchObject({ channel: 'ops', kind: 'message', speaker: { platform: 'chat', name: 'Bob Member' }, gateway: expect.any(String), time: expect.any(String) });
    await waitFor('the queue empty', () => stats(e).webhook_queued === 0);
    expect(stats(e)).toMatchObject({ webhook_delivered: 3, webhook_retries: 4, dead_lettered: 0 });
  });

  test('a receiver that sends the headers and never finishes the body, or never answers, fails the attempt after timeout_ms while garbage is collected; the line is tried again and the queue moves on (#31 item 8)', async () => {
    const gc = exposedGc();
    let pressure: NodeJS.Timeout | undefined;
    try {
      const hook = await receiver(['stall-body', 'hang', 'stall-body']);
      const { e } = await setup({ webhooks: [{ url: hook.url, secret: WEBHOOK_SECRET, timeout_ms: 500 }] });
      pressure = setInterval(gc, 100);
      await post(e.svc, 'general', 'bob', 'first');
      await post(e.svc, 'general', 'bob', 'second');
      // A hang lasts undici's 300 s: delivered at all within the wait means each attempt was cut at
      // timeout_ms, which the reasons logged below say (no timed assertion: the machine may be loaded).
      await waitFor('both lines delivered', () => hook.lines.length === 2, 30_000);
      expect(said(hook.lines)).toEqual(['Bob Member: first', 'Bob Member: second']);
      expect(hook.received.map((r) => r.answered)).toEqual(['stall-body', 'hang', 'stall-body', 200, 200]);
      expect([...hook.accepted.values()]).toEqual([1, 1]);
      await waitFor('the queue empty', () => stats(e).webhook_queued === 0);
      expect(stats(e)).toMatchObject({ webhook_delivered: 2, webhook_retries: 3, dead_lettered: 0 });
      expect(e.log.lines.filter((line) => /a webhook did not take a line/.test(String(line.msg))).map((line) => line.reason))
        .toEqual(['no answer within 500 ms', 'no answer within 500 ms', 'no answer within 500 ms']);
    } finally {
      if (pressure) clearInterval(pressure);
    }
  });

  test('a receiver that takes the connection and never says a word: each attempt ends after timeout_ms and is tried again (#31 item 8)', async () => {
    const gc = exposedGc();
    let pressure: NodeJS.Timeout | undefined;
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((ready) => silent.listen(0, '127.0.0.1', ready));
    try {
      const port = (silent.address() as { port: number }).port;
      const { e } = await setup({ webhooks: [{ url: `http://127.0.0.1:${port}/hook`, secret: WEBHOOK_SECRET, timeout_ms: 300 }] });
      pressure = setInterval(gc, 100);
      const started = Date.now();
      await post(e.svc, 'general', 'bob', 'into the void');
      // Attempts of 300 ms and pauses of 50 to 200 ms: three failed attempts in well under 3 s.
      await waitFor('three attempts failed', () => (stats(e).webhook_retries ?? 0) >= 3, 10_000);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(sockets.length).toBeGreaterThanOrEqual(3);
      expect(stats(e)).toMatchObject({ webhook_delivered: 0, webhook_queued: 1, dead_lettered: 0 });
      expect(e.log.lines.find((line) => /a webhook did not take a line/.test(String(line.msg)))).toMatchObject({ reason: 'no answer within 300 ms' });
    } finally {
      if (pressure) clearInterval(pressure);
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => silent.close(closed));
    }
  });

  test('a webhook answering 400 gets nothing more and one never reached gives up after dead_letter_after: the lines go to dead-letter files; lines queued at a stop are delivered after the restart', async () => {
    const refusing = await receiver([], 400);
    const down = await receiver([], 503);
    const nowhere = `http://127.0.0.1:${await freePort()}/hook`;
    const { e } = await setup({
      webhooks: [
        { url: refusing.url, secret: WEBHOOK_SECRET, timeout_ms: 500 },
        { url: down.url, secret: WEBHOOK_SECRET, timeout_ms: 500 },
        { url: nowhere, secret: WEBHOOK_SECRET, timeout_ms: 500, dead_letter_after: 300 },
      ],
    });
    await post(e.svc, 'general', 'bob', 'refused for good');
    await post(e.svc, 'general', 'bob', 'waits for the restart');
    await waitFor('both lines given up by two webhooks', () => stats(e).dead_lettered === 4);
    expect(refusing.received).toHaveLength(2);
    const deadFiles = readdirSync(dataDir(e)).filter((name) => /^dead-\w+\.jsonl$/.test(name));
    expect(deadFiles).toHaveLength(2);
    const dead = deadFiles.flatMap((name) => readFileSync(join(dataDir(e), name), 'utf8').trim().split('\n'))
      .map((line) => JSON.parse(line) as { status?: number; reason: string; line: { text: string } })
      .map((d) => [d.status ?? d.reason, d.line.text]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(dead).toEqual([
      [400, 'refused for good'], [400, 'waits for the restart'],
      ['not delivered within 300 ms', 'refused for good'], ['not delivered within 300 ms', 'waits for the restart'],
    ]);

    await waitFor('the other webhook tried', () => down.received.length >= 2);
    expect(stats(e).webhook_queued).toBe(2);
    await e.supervisor!.stop();
    down.answer(200);
    await e.start();
    await waitFor('delivered after the restart', () => down.lines.length === 2);
    expect(said(down.lines)).toEqual(['Bob Member: refused for good', 'Bob Member: waits for the restart']);
    expect([...down.accepted.values()]).toEqual([1, 1]);
    // The refusing webhook's lines are not tried again.
    expect(refusing.received).toHaveLength(2);
  });

  test('two event-stream clients both get every line; one comes back with Last-Event-ID and gets exactly what it missed; polling reads the same', async () => {
    const { e, base } = await setup({ stream_keep: 3, keepalive_ms: 200 });
    const events = `${base}/gateways/ops/events`;
    const one = await SseClient.open(events);
    const two = await SseClient.open(events);
    await post(e.svc, 'general', 'bob', 'first');
    await post(e.svc, 'general', 'bob', 'second');
    await waitFor('both clients got two lines', () => one.messages().length === 2 && two.messages().length === 2);
    expect(one.messages()).toEqual(['1 first', '2 second']);
    expect(two.messages()).toEqual(['1 first', '2 second']);

    one.close();
    await waitFor('one client left', () => stats(e).stream_clients === 1);
    await post(e.svc, 'general', 'bob', 'third');
    await post(e.svc, 'general', 'bob', 'fourth');
    await waitFor('the other got them', () => two.messages().length === 4);
    const back = await SseClient.open(events, { 'last-event-id': '2' });
    await waitFor('the missed lines', () => back.messages().length === 2);
    await post(e.svc, 'general', 'bob', 'fifth');
    await waitFor('the fifth line', () => back.messages().length === 3 && two.messages().length === 5);
    expect(back.messages()).toEqual(['3 third', '4 fourth', '5 fifth']);
    expect(two.messages()).toEqual(['1 first', '2 second', '3 third', '4 fourth', '5 fifth']);
    expect(back.events.some((event) => event.event === 'reset')).toBe(false);
    await waitFor('a keepalive comment', () => back.comments.includes(':keepalive'));

    // Only the last three are kept: a position older than that starts with a reset.
    const late = await SseClient.open(`${events}?after=1`);
    await waitFor('the kept lines', () => late.messages().length === 3);
    expect(late.events[0]).toMatchObject({ event: 'reset' });
    expect(late.messages()).toEqual(['3 third', '4 fourth', '5 fifth']);

    const poll = await request(`${base}/gateways/ops/messages?after=3&limit=10`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(poll.statusCode).toBe(200);
    const page = await poll.body.json() as { messages: Array<{ seq: number; text: string }>; reset: boolean; next: number };
    expect(page.messages.map((m) => [m.seq, m.text])).toEqual([[4, 'fourth'], [5, 'fifth']]);
    expect(page).toMatchObject({ reset: false, next: 5 });
    const refused = await request(events, { headers: { authorization: 'Bearer wrong-token-0123456789' } });
    expect(refused.statusCode).toBe(401);
    await refused.body.dump();
  });

  test('the plugin alone, over TLS: a line the gateway sends again (same key) goes out once; line numbers and positions survive a restart', async () => {
    const hook = await receiver();
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-http-api-'));
    const store = KeyValueStore.memory();
    const tls = await localTls(join(dir, 'tls'));
    writeFileSync(join(dir, 'cert.pem'), tls.cert);
    writeFileSync(join(dir, 'key.pem'), tls.key);
    const trusting = new Agent({ connect: { ca: tls.ca } });
    const open = async (): Promise<{ plugin: PluginInstance; base: string }> => {
      const env = {
        dataDir: dir, storage: FILE_STORAGE, store, configDir: dir, log: pino({ level: 'silent' }), stopping: new AbortController().signal,
        gateway: { channels: () => ['ops'], receive: () => Promise.resolve(), posted: () => undefined, nativeOf: () => undefined },
      } as unknown as PluginEnv;
      const options = httpApi.options.parse({
        listen: { port: 0 }, tls: { cert_file: 'cert.pem', key_file: 'key.pem' }, clients: [{ name: 'reader', token: TOKEN }], webhooks: [{ url: hook.url, secret: WEBHOOK_SECRET }],
      });
      const plugin = await httpApi.create(options, env);
      await plugin.start!();
      expect(plugin.status!().connection?.detail).toMatch(/^listening on https:\/\/127\.0\.0\.1:\d+$/);
      return { plugin, base: `https://127.0.0.1:${plugin.stats!().port}` };
    };
    const line = (key: string, text: string) => ({
      key, gateway: 'lobby', kind: 'message', text, speaker: { platform: 'irc', id: 'alice!a@example.org', name: 'alice' },
      origin: { endpoint: 'irc:#lobby@bot/relay-irc', platform: 'irc', nativeId: key }, time: new Date().toISOString(),
    }) as unknown as OutgoingMessage;
    try {
      const first = await open();
      first.plugin.endpoint!.send('ops', line('k1', 'one'));
      first.plugin.endpoint!.send('ops', line('k2', 'two'));
      first.plugin.endpoint!.send('ops', line('k1', 'one'));
      await waitFor('two lines delivered', () => hook.lines.length === 2);
      expect(first.plugin.stats!()).toMatchObject({ sent: 2, sent_again: 1 });
      await first.plugin.stop!();

      const second = await open();
      second.plugin.endpoint!.send('ops', line('k2', 'two'));
      second.plugin.endpoint!.send('ops', line('k3', 'three'));
      const back = await SseClient.open(`${second.base}/gateways/ops/events`, { 'last-event-id': '1' }, trusting);
      await waitFor('what came after 1', () => back.messages().length === 2);
      expect(back.messages()).toEqual(['2 two', '3 three']);
      await waitFor('the third line delivered', () => hook.lines.length === 3);
      expect(hook.lines.map((l) => l.text)).toEqual(['one', 'two', 'three']);
      expect([...hook.accepted.values()]).toEqual([1, 1, 1]);
      expect(second.plugin.stats!()).toMatchObject({ sent: 1, sent_again: 1 });
      back.close();
      await second.plugin.stop!();
    } finally {
      await trusting.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
