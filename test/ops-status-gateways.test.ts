import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GATEWAY_SAMPLING, GatewayWatch } from '../src/ops/gateway-watch.js';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import type { StatusSnapshot } from '../src/ops/status-snapshot.js';
import { cleanEnv, runCli } from './helpers/cli.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { requireTool } from './helpers/require-tool.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The status page's gateways (#36 item 13), in a real headless Chromium (Debian's), against a real
 * supervisor, service and ngircd: after lines went both ways between the chat `general` and `#general`,
 * the relay's row shows its lines in and out (not "Handled 0"), and the gateway shows each side with
 * its state, lines in and out, last minute, queue, last line and lag, and two charts drawn by the page
 * (inline SVG) from the history the process kept, though the page was opened after the lines went.
 */

let server: IrcServer;
let alice: IrcWatcher;
let env: Env;
let ops: Operations;
let browser: BrowserContext | undefined;
let profile: string | undefined;

beforeAll(async () => {
  server = await IrcServer.start({ kind: 'ngircd' });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
  env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    reply_rate: { per_second: 50, burst: 50 },
    plugins: [relayPlugin(server, { channels: { general: '#general' } })],
  }]);
  const supervisor = await env.start();
  await alice.waitForLine(/^:gwbot!\S+ JOIN :?#general/i);
  ops = new Operations({
    supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 1 }, log: env.log.logger, errors: new RecentErrors(), stateDir: env.stateDir,
    pushEveryMs: 200, gatewaySampleEveryMs: 200,
  });
  await ops.start();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await ops?.close();
  alice?.close();
  await env?.close();
  await server?.close();
});

async function openBrowser(): Promise<Page> {
  profile = mkdtempSync(join(tmpdir(), 'groupwire-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: requireTool('/usr/bin/chromium', 'chromium'),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  return browser.pages()[0] ?? browser.newPage();
}

const snapshot = async (): Promise<StatusSnapshot> => (await (await request(`${ops.url}/status.json`)).body.json()) as StatusSnapshot;
const cells = async (page: Page, selector: string): Promise<string[]> => page.locator(`${selector} td`).allInnerTexts();

describe('ops endpoint: the gateways on the status page', () => {
  test('a relay shows its lines in and out; each gateway side its state, counts, queue, last line and lag, and a live chart drawn by the page', { timeout: 60_000 }, async () => {
    await post(env.svc, 'general', 'bob', 'from the chat {n}', 5);
    for (let n = 1; n <= 3; n += 1) alice.send(`PRIVMSG #general :from IRC ${n}`);
    await waitFor('the lines on both sides', () => alice.texts('#general', 'gwbot').filter((t) => t.includes('from the chat')).length === 5, 20_000);
    // Sampled at least twice after the lines went both ways (the chart has points that show them).
    await waitFor('the counts in /status.json', async () => {
      const sides = (await snapshot()).gateways.flatMap((gateway) => gateway.sides);
      const irc = sides.find((side) => side.side === 'irc #general');
      const chat = sides.find((side) => side.side === 'chat general');
      return irc?.linesIn === 3 && irc.linesOut === 5 && chat?.linesIn === 5 && chat.linesOut === 3 && chat.history.perSecond.some((rate) => rate > 0);
    }, 20_000);
    const gateways = (await snapshot()).gateways;
    expect(gateways).toHaveLength(1);
    const gateway = gateways[0]!;
    expect(gateway.historyPoints).toBe(180);
    const irc = gateway.sides.find((side) => side.side === 'irc #general')!;
    expect(irc).toMatchObject({ kind: 'relay', instance: 'relay-irc', state: 'connected', linesIn: 3, linesOut: 5, queue: 0, lagSeconds: 0, lastMinute: { in: 3, out: 5 } });
    expect(irc.lastLineSeconds).not.toBeNull();
    const relayRow = (await snapshot()).bots[0]!.plugins.find((plugin) => plugin.instance === 'relay-irc')!;
    expect(relayRow.sides).toEqual([expect.objectContaining({ side: 'irc #general', linesIn: 3, linesOut: 5, queue: 0 })]);

    // `groupwire status` (the CLI, a child process) says the same in the terminal: the relay's lines in
    // and out where its HANDLED was 0, and the gateway's sides.
    const terminal = await runCli(['status', '--url', ops.url!], cleanEnv());
    expect(terminal.stderr).toBe('');
    expect(terminal.stdout).toMatch(/^ {2}relay-irc +relay-irc +in 3 · out 5 +0 +0 +connected/m);
    expect(terminal.stdout).toContain(`Gateway ${gateway.name}${gateway.implied ? " (from the relays' channels)" : ''}\n`);
    expect(terminal.stdout).toMatch(/^ {2}SIDE +BOT +STATE +IN +OUT +LAST MINUTE +QUEUE +LAST LINE +LAG$/m);
    expect(terminal.stdout).toMatch(/^ {2}chat general +bot0 +open +5 +3 +5 in · 3 out +0 +(just now|\d+ s ago) +0 s$/m);
    expect(terminal.stdout).toMatch(/^ {2}irc #general +bot0 +connected +3 +5 +3 in · 5 out +0 +(just now|\d+ s ago) +0 s$/m);

    // The page opened only now: what it draws of the past came from the process.
    const page = await openBrowser();
    const problems: string[] = [];
    const elsewhere: string[] = [];
    page.on('pageerror', (error) => problems.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('request', (sent) => {
      if (!sent.url().startsWith(ops.url!) && !sent.url().startsWith('data:')) elsewhere.push(sent.url());
    });
    expect((await page.goto(`${ops.url}/status`))?.status()).toBe(200);
    const sideRow = (side: string) => `[data-gateway="${gateway.name}"] tr[data-side="${side}"]`;
    await page.waitForSelector(`${sideRow('irc #general')}[data-state="connected"]`, { timeout: 20_000 });
    await page.waitForSelector(`${sideRow('chat general')}[data-state="open"]`, { timeout: 20_000 });
    // Side, Bot, State, In, Out, Last minute, Queue, Last line, Lag.
    const ircCells = await cells(page, sideRow('irc #general'));
    expect(ircCells.slice(0, 7)).toEqual(['irc #general', 'bot0', 'connected', '3', '5', '3 in · 5 out', '0']);
    expect(ircCells[7]).toMatch(/^(just now|\d+ s ago)$/);
    expect(ircCells[8]).toBe('0 s');
    expect((await cells(page, sideRow('chat general'))).slice(0, 7)).toEqual(['chat general', 'bot0', 'open', '5', '3', '5 in · 3 out', '0']);
    // The relay's own row: its lines, not "Handled 0"; and its side under the bot's plugins.
    expect((await cells(page, '[data-plugin="relay-irc"]'))[2]).toBe('in 3 · out 5');
    expect((await cells(page, '[data-relay-side="relay-irc irc #general"]')).slice(0, 6)).toEqual(['relay-irc', 'irc #general', 'connected', '3', '5', '0']);

    // The charts: one line per side, drawn by the page's own script as inline SVG, with the lines that went.
    for (const chart of ['rate', 'queue']) {
      const lines = page.locator(`[data-gateway="${gateway.name}"] svg[data-chart="${chart}"] polyline`);
      await expect(lines.count()).resolves.toBe(2);
      expect(Number(await lines.first().getAttribute('data-points'))).toBeGreaterThanOrEqual(2);
    }
    expect(Number(await page.locator('svg[data-chart="rate"]').getAttribute('data-max'))).toBeGreaterThan(0);
    // Live: more lines, and the chart is drawn again with more points without reloading the page.
    const before = Number(await page.locator('svg[data-chart="rate"] polyline').first().getAttribute('data-points'));
    await post(env.svc, 'general', 'carol', 'later {n}', 2);
    await page.locator(sideRow('irc #general')).locator('td:nth-child(5)').filter({ hasText: /^7$/ }).waitFor({ timeout: 20_000 });
    await expect.poll(async () => Number(await page.locator('svg[data-chart="rate"] polyline').first().getAttribute('data-points')), { timeout: 10_000 }).toBeGreaterThan(before);

    mkdirSync('test-results', { recursive: true });
    const shot = resolve('test-results/status-gateways.png');
    await page.locator('#gateways').screenshot({ path: shot });
    await page.screenshot({ path: resolve('test-results/status-gateways-page.png'), fullPage: true });
    console.info(`status page gateways: screenshot ${shot}`);
    // Nothing loaded from elsewhere, nothing the strict CSP refused.
    expect(elsewhere).toEqual([]);
    expect(problems).toEqual([]);
  });

  test('each side keeps at most 180 samples (15 minutes at 5 s): a process up for days holds no more', () => {
    let clock = 0;
    const plan = [{ name: 'g', implied: false, throughChat: false, endpoints: [{ kind: 'chat' as const, bot: 'nobody', chat: 'general', direction: 'inout' as const }] }];
    const watch = new GatewayWatch({ bots: () => [], gateways: () => plan }, GATEWAY_SAMPLING.everyMs, () => clock);
    for (let n = 0; n < 1_000; n += 1) {
      watch.sample();
      clock += GATEWAY_SAMPLING.everyMs;
    }
    const [side] = watch.status()[0]!.sides;
    expect(side).toMatchObject({ side: 'chat general', state: 'not joined', linesIn: 0, linesOut: 0 });
    expect(side!.history.perSecond).toHaveLength(180);
    expect(side!.history.queue).toHaveLength(180);
  });
});
