import { afterEach, describe, expect, test } from 'vitest';
import { request } from 'undici';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { ScrapeMetric, type Sample } from '../src/ops/scrape-metric.js';
import { DEMO } from './helpers/service.js';
import { EXPORTED_METRICS } from './helpers/alert-metrics.js';
import { promtoolCheck, samples, type PromSample } from './helpers/prometheus-text.js';
import { adminOk, makeEnv, post, probes, waitFor, type Env } from './helpers/supervisor.js';

/** The operations endpoint's /metrics, /readyz and /healthz against a real supervisor and service. */

let env: Env | undefined;
let ops: Operations | undefined;
afterEach(async () => {
  await ops?.close();
  ops = undefined;
  await env?.close();
  env = undefined;
});

/** prom-client's default process metrics whose names promtool's linter dislikes (gauges ending in _total): theirs, kept as named. */
const UPSTREAM_LINT = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

async function get(url: string, headers: Record<string, string> = {}) {
  const answer = await request(url, { headers });
  return { status: answer.statusCode, text: await answer.body.text(), type: String(answer.headers['content-type']) };
}

async function scrape(token?: string): Promise<PromSample[]> {
  const answer = await get(`${ops!.url}/metrics`, token ? { authorization: `Bearer ${token}` } : {});
  expect(answer.status).toBe(200);
  expect(answer.type).toContain('text/plain');
  // Prometheus's own parser and linter: a malformed exposition fails; our own names pass the lint.
  const remarks = promtoolCheck(answer.text);
  expect(remarks.filter((remark) => !UPSTREAM_LINT.some((name) => remark.startsWith(`${name} `)))).toEqual([]);
  return samples(answer.text);
}

function find(all: PromSample[], name: string, labels: Record<string, string>): PromSample[] {
  return all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

function value(all: PromSample[], name: string, labels: Record<string, string>): number | undefined {
  return find(all, name, labels)[0]?.value;
}

async function start(opsConfig: { token?: string } = {}) {
  env = await makeEnv([]);
  const recorder = env.probe('recorder');
  env.writeConfig([{ chats: [{ chat: 'general' }, { chat: 'random' }], plugins: [{ use: recorder, with: { key: 'metrics' } }, { use: 'responder' }] }]);
  const supervisor = await env.start();
  ops = new Operations({
    supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 0.3, ...opsConfig }, log: env.log.logger, errors: new RecentErrors(), stateDir: env.stateDir,
  });
  await ops.start();
  return supervisor;
}

const seen = () => probes().seen.metrics ?? [];

describe('ops endpoint: /metrics', () => {
  test('counters move as messages flow; the lag rises while a chat is held down and falls after; /readyz follows', { timeout: 120_000 }, async () => {
    const supervisor = await start();
    const chat = { bot: 'bot0', group: 'demo', chat: 'general' };
    const before = await scrape();
    const handled0 = value(before, 'groupwire_chat_messages_total', chat)!;
    const plugin0 = value(before, 'groupwire_plugin_messages_total', { bot: 'bot0', instance: 'recorder' }) ?? 0;
    expect(value(before, 'groupwire_chat_socket_state', { ...chat, state: 'open' })).toBe(1);
    expect(value(before, 'groupwire_bot_ready', { bot: 'bot0' })).toBe(1);
    expect((await get(`${ops!.url}/readyz`)).status).toBe(200);

    await post(env!.svc, 'general', 'carol', 'counted {n}', 5);
    await waitFor('five messages handed on', () => seen().filter((s) => s.text.startsWith('counted')).length === 5);
    const after = await scrape();
    expect(value(after, 'groupwire_chat_messages_total', chat)).toBe(handled0 + 5);
    expect(value(after, 'groupwire_plugin_messages_total', { bot: 'bot0', instance: 'recorder' })).toBe(plugin0 + 5);
    const recorder = { bot: 'bot0', instance: 'recorder' };
    expect(value(after, 'groupwire_plugin_latency_seconds_count', recorder)).toBe(plugin0 + 5);
    expect(value(after, 'groupwire_plugin_latency_seconds_bucket', { ...recorder, le: '+Inf' })).toBe(plugin0 + 5);
    expect(value(after, 'groupwire_plugin_latency_seconds_sum', recorder)).toBeGreaterThan(0);
    expect(value(after, 'groupwire_chat_lag_messages', chat)).toBe(0);
    // Each side's backlog (#32 part 3): the bot's posts into each chat, none waiting.
    const general = { bot: 'bot0', side: 'chat general' };
    expect(value(after, 'groupwire_backlog_lines', general)).toBe(0);
    expect(value(after, 'groupwire_backlog_oldest_seconds', general)).toBe(0);
    expect(value(after, 'groupwire_backlog_behind', general)).toBe(0);
    const status = JSON.parse((await get(`${ops!.url}/status.json`)).text) as { backlogs: Array<Record<string, unknown>> };
    expect(status.backlogs).toContainEqual(expect.objectContaining({ ...general, lines: 0, oldestSeconds: 0, behind: false, limit: expect.stringMatching(/^reply_rate: /) }));
    // The REST calls the bot made, by operation and answer; the responder's own stats() under its name.
    expect(value(after, 'groupwire_rest_calls_total', { bot: 'bot0', operation: 'getchats', answer: 'ok' })).toBeGreaterThan(0);
    expect(after.some((sample) => sample.name.startsWith('groupwire_plugin_responder_') && sample.labels.instance === 'responder')).toBe(true);
    // Every metric deploy/alerts.yml may name is in a real scrape (test/deploy-files.test.ts checks the alerts against the list).
    // (A family is declared even with no sample yet: queue depths need a relay.)
    const exposition = (await get(`${ops!.url}/metrics`)).text;
    for (const name of EXPORTED_METRICS) expect(exposition, name).toContain(`# TYPE ${name} `);
    // The process's own.
    for (const name of ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_active_handles_total']) {
      expect(after.some((sample) => sample.name === name), name).toBe(true);
    }

    // Held down: the socket cut and upgrades refused for a while; messages arrive meanwhile.
    await adminOk(env!.svc, 'faults/refuse-upgrades', { seconds: 6 });
    await adminOk(env!.svc, 'faults/drop-sockets', { chat: 'general' });
    await post(env!.svc, 'general', 'bob', 'while down {n}', 4);
    const down = await waitFor('the lag to show the four messages', async () => {
      const families = await scrape();
      return (value(families, 'groupwire_chat_lag_messages', chat) ?? 0) >= 4 ? families : undefined;
    });
    expect(value(down, 'groupwire_chat_socket_state', { ...chat, state: 'open' })).toBe(0);
    expect(value(down, 'groupwire_chat_upgrades_refused_total', chat)).toBeGreaterThan(0);
    const readyz = await get(`${ops!.url}/readyz`);
    expect(readyz.status).toBe(503);
    expect(JSON.parse(readyz.text).notReady).toEqual([expect.objectContaining({ bot: 'bot0', chat: 'general' })]);

    // The reconnect's backoff after a few refused upgrades may reach tens of seconds (its jitter is full).
    await waitFor('the lag back to 0', async () => value(await scrape(), 'groupwire_chat_lag_messages', chat) === 0, 75_000);
    const recovered = await scrape();
    expect(value(recovered, 'groupwire_chat_messages_total', chat)).toBe(handled0 + 9);
    expect(value(recovered, 'groupwire_chat_socket_state', { ...chat, state: 'open' })).toBe(1);
    const causes = find(recovered, 'groupwire_chat_reconnects_total', chat);
    expect(causes.reduce((sum, m) => sum + m.value, 0)).toBeGreaterThan(0);
    expect((await get(`${ops!.url}/readyz`)).status).toBe(200);
    expect(supervisor.bots[0]!.runners.find((r) => r.info.subject === 'general')!.connection.state).toBe('open');
  });

  test('/healthz answers while the loop turns; labels carry no message text or user id; no secret on any page', { timeout: 30_000 }, async () => {
    const supervisor = await start();
    await post(env!.svc, 'general', 'carol', 'secret-looking text 7f3a');
    await waitFor('the message', () => seen().some((s) => s.text.includes('7f3a')));
    const health = await get(`${ops!.url}/healthz`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toMatchObject({ alive: true });

    const client = supervisor.bots[0]!.client;
    const secrets = [DEMO.bot[1], env!.svc.service.adminToken, client.session.csrf!].filter(Boolean);
    const carolId = seen().find((s) => s.text.includes('7f3a'))!.userId;
    const pages = await Promise.all(['/metrics', '/status.json', '/readyz', '/healthz', '/status'].map((path) => get(`${ops!.url}${path}`)));
    for (const page of pages) {
      expect(page.status).toBe(200);
      for (const secret of secrets) expect(page.text).not.toContain(secret);
      expect(page.text).not.toContain('7f3a');
    }
    // No user id as a label value.
    for (const sample of await scrape()) expect(Object.values(sample.labels)).not.toContain(carolId);
  });

  test('with ops.token every path needs it; without one, a foreign Host is refused', { timeout: 30_000 }, async () => {
    const token = 'a-long-ops-token-0123456789';
    await start({ token });
    expect((await get(`${ops!.url}/metrics`)).status).toBe(401);
    expect((await get(`${ops!.url}/readyz`)).status).toBe(401);
    expect((await get(`${ops!.url}/metrics`, { authorization: 'Bearer wrong-token-of-same-size-xx' })).status).toBe(401);
    await scrape(token);
    expect((await get(`${ops!.url}/status.json?token=${token}`)).status).toBe(200);
    await ops!.close();

    ops = new Operations({
      supervisor: env!.supervisor!, config: { listen: '127.0.0.1:0', lag_probe_seconds: 0 }, log: env!.log.logger, errors: new RecentErrors(), stateDir: env!.stateDir,
    });
    await ops.start();
    expect((await get(`${ops.url}/metrics`, { host: 'attacker.example:9464' })).status).toBe(403);
    const reload = await request(`${ops.url}/reload`, { method: 'POST', headers: { origin: 'http://attacker.example' } });
    expect(reload.statusCode).toBe(403);
    await reload.body.text();
  });

  test('the exposition is written by hand: label values with quotes, backslashes and new lines are escaped as Prometheus reads them', () => {
    const subject = 'say "hi" \\ there\nnext line';
    const family = new ScrapeMetric('groupwire_test_lines', 'a help text with a \\ and\na new line', 'gauge', (): Sample[] => [
      { labels: { chat: subject, n: 1 }, value: 2.5 }, { labels: 'chat="plain"', value: Number.POSITIVE_INFINITY }, { labels: {}, value: Number.NaN },
    ]);
    const text = family.render();
    expect(promtoolCheck(text)).toEqual([]);
    const read = samples(text);
    expect(read.map((sample) => [sample.labels.chat, sample.value])).toEqual([[subject, 2.5], ['plain', Number.POSITIVE_INFINITY], [undefined, Number.NaN]]);
  });
});
