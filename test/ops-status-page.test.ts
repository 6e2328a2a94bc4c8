import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import type { OpsConfig } from '../src/config/bots-config.js';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import type { StatusSnapshot } from '../src/ops/status-snapshot.js';
import { DEMO } from './helpers/service.js';
import { adminOk, makeEnv, post, type Env } from './helpers/supervisor.js';
import { requireTool } from './helpers/require-tool.js';

/** The live status page in a real headless Chromium (Debian's), against a real supervisor and service. */

let env: Env | undefined;
let ops: Operations | undefined;
let browser: BrowserContext | undefined;
let profile: string | undefined;
let errors: RecentErrors;
afterEach(async () => {
  await browser?.close();
  browser = undefined;
  if (profile) rmSync(profile, { recursive: true, force: true });
  profile = undefined;
  await ops?.close();
  ops = undefined;
  await env?.close();
  env = undefined;
});

async function start(opsConfig: Partial<OpsConfig> = {}, before?: (svc: Env['svc']) => Promise<void>, chats = ['general', 'random']) {
  env = await makeEnv([]);
  errors = new RecentErrors();
  await before?.(env.svc);
  env.writeConfig([{ chats: chats.map((chat) => ({ chat })), plugins: [{ use: env.probe('recorder') }, { use: 'responder' }] }]);
  const supervisor = await env.start();
  ops = new Operations({
    supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 1, ...opsConfig }, log: env.log.logger, errors, stateDir: env.stateDir,
  });
  await ops.start();
  return supervisor;
}

/** A fresh Chromium profile each time: nothing cached from another run. */
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

const chatRow = (subject: string, state: string) => `[data-chat="${subject}"][data-state="${state}"]`;

describe('ops endpoint: the status page', () => {
  test('shows every chat; a dropped chat turns reconnecting and back to open without a reload', { timeout: 90_000 }, async () => {
    await start();
    const page = await openBrowser();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    const answer = await page.goto(`${ops!.url}/status`);
    expect(answer?.status()).toBe(200);
    await page.waitForSelector(chatRow('general', 'open'), { timeout: 20_000 });
    await page.waitForSelector(chatRow('random', 'open'), { timeout: 20_000 });
    await expect(page.locator('[data-ready]').getAttribute('data-ready')).resolves.toBe('true');
    const header = await page.locator('header').innerText();
    expect(header).toMatch(/\d+\.\d+\.\d+/);
    expect(header).toContain(String(process.pid));
    // With nothing changing, the stream sends ticks: the page's clock still moves on.
    const updated = await page.locator('#updated').innerText();
    await expect.poll(() => page.locator('#updated').innerText(), { timeout: 5_000 }).not.toBe(updated);
    // (Page code as strings: this project compiles without the DOM's types.)
    await page.evaluate('window.__marker = 1');

    // Held down a while: the socket cut and the upgrades refused for 4 s.
    await adminOk(env!.svc, 'faults/refuse-upgrades', { seconds: 4 });
    await adminOk(env!.svc, 'faults/drop-sockets', { chat: 'general' });
    await page.waitForSelector(chatRow('general', 'reconnecting'), { timeout: 20_000 });
    await expect(page.locator('[data-ready]').getAttribute('data-ready')).resolves.toBe('false');
    await page.waitForSelector(chatRow('general', 'open'), { timeout: 30_000 });
    await page.waitForSelector('[data-ready="true"]', { timeout: 10_000 });
    // The same page all along: updated in place, not reloaded.
    expect(await page.evaluate('window.__marker')).toBe(1);
    expect(await page.locator(`[data-chat="general"]`).innerText()).toMatch(/reconnect|upgrade|drop|closed|1006/i);

    // Messages handed on, and a warning of the log, show too.
    await post(env!.svc, 'general', 'carol', 'hello {n}', 3);
    await page.locator('[data-plugin="recorder"] td:nth-child(3)').filter({ hasText: /^3$/ }).waitFor({ timeout: 20_000 });
    errors.take(JSON.stringify({ level: 40, time: Date.now(), msg: 'a warning for the page', bot: 'bot0', chat: 'general', reason: 'shown as <text>' }));
    await page.locator('#errors td', { hasText: 'shown as <text>' }).waitFor({ timeout: 10_000 });
    // Each side's backlog (#32 part 3): the bot's posts into the chat, keeping up.
    await page.locator('#backlogs tr', { hasText: 'chat general' }).filter({ hasText: 'keeping up' }).waitFor({ timeout: 10_000 });
    // Plugins are listed with their counters.
    await expect(page.locator('[data-plugin="recorder"]').count()).resolves.toBe(1);
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/status-page.png', fullPage: true });
    // The strict CSP allowed everything the page does (a refusal shows as a console error).
    expect(problems).toEqual([]);

    // The endpoint gone: the page says so (and keeps what it last showed).
    await ops!.close();
    await page.waitForSelector('body[data-live="false"]', { timeout: 10_000 });
    expect(await page.locator('#banner').innerText()).toMatch(/connection to groupwire lost; retrying/i);
    await page.waitForSelector(chatRow('general', 'open'));
  });

  test('with ops.token: the page opened with ?token= is live; without it the page is refused', { timeout: 60_000 }, async () => {
    const token = 'status-page-token-0123456789';
    await start({ token });
    const page = await openBrowser();
    const refused = await page.goto(`${ops!.url}/status`);
    expect(refused?.status()).toBe(401);
    const opened = await page.goto(`${ops!.url}/status?token=${token}`);
    expect(opened?.status()).toBe(200);
    // The chats come over the event stream, which carried the token on.
    await page.waitForSelector(chatRow('general', 'open'), { timeout: 20_000 });
    await page.waitForSelector(chatRow('random', 'open'), { timeout: 20_000 });
  });

  test('no secret in the page or in /status.json; a subject with markup is shown as text', { timeout: 60_000 }, async () => {
    const token = 'status-secret-token-0123456789';
    const hostile = '<img src=x onerror="window.__pwned=1"><b>bold</b>';
    const supervisor = await start({ token }, async (svc) => {
      await adminOk(svc, 'chats', { group: 'demo', owner: DEMO.alice[0], subject: hostile, members: [DEMO.bot[0]] });
    }, ['general', hostile]);
    const client = supervisor.bots[0]!.client;
    const cookie = client.session.headers().cookie ?? '';
    const secrets = [DEMO.bot[1], env!.svc.service.adminToken, token, client.session.csrf!,
      ...cookie.split('; ').map((pair) => pair.slice(pair.indexOf('=') + 1))].filter((secret) => secret && secret.length >= 6);
    expect(secrets.length).toBeGreaterThanOrEqual(4);
    const auth = { authorization: `Bearer ${token}` };
    for (const path of ['/status', '/status.json']) {
      const answer = await request(`${ops!.url}${path}`, { headers: auth });
      expect(answer.statusCode).toBe(200);
      const text = await answer.body.text();
      for (const secret of secrets) expect(text).not.toContain(secret);
    }

    const page = await openBrowser();
    await page.goto(`${ops!.url}/status?token=${token}`);
    await page.waitForSelector(chatRow('general', 'open'), { timeout: 20_000 });
    const row = page.locator(`[data-chat=${JSON.stringify(hostile)}][data-state="open"]`);
    await row.waitFor({ timeout: 20_000 });
    expect(await row.innerText()).toContain(hostile);
    expect(await page.locator('main img, main b').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    // Nothing the page shows carries a secret (the token is in the page's own address only).
    const rendered = await page.content();
    for (const secret of secrets.filter((secret) => secret !== token)) expect(rendered).not.toContain(secret);
  });
});
