import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import type { Attachment, PluginContext } from '../src/index.js';
import { FORMATS } from '../plugins/logger/formats.js';
import { loggedMessage } from '../plugins/logger/logged-message.js';
import { requireTool } from './helpers/require-tool.js';

/**
 * The logger's HTML transcript in a real browser (Chromium): a relayed line's image is a thumbnail that
 * loads from the stored file's link, capped in size by the page's style, inside a link to the file; a
 * hostile file name runs nothing.
 */

let browser: BrowserContext | undefined;
let server: Server | undefined;
let profile: string | undefined;
afterEach(async () => {
  await browser?.close();
  await new Promise((done) => (server ? server.close(done) : done(undefined)));
  if (profile) rmSync(profile, { recursive: true, force: true });
  browser = undefined;
  server = undefined;
  profile = undefined;
});

/** A real PNG of `width` × `height` grey pixels. */
function png(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([head, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
  const rows = Buffer.alloc((width + 1) * height, 0x80);
  for (let y = 0; y < height; y += 1) rows[y * (width + 1)] = 0; // filter: none
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

describe('logger: the html transcript\'s thumbnails in a browser', () => {
  test('an image with a link shows as a thumbnail at most 320 × 240, linking to the stored file; a hostile name runs nothing', { timeout: 60_000 }, async () => {
    const picture = png(1200, 900);
    let page = '';
    server = createServer((request, response) => {
      if (request.url === '/transcript.html') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
      else if (request.url?.startsWith('/media/')) response.writeHead(200, { 'content-type': 'image/png' }).end(picture);
      else response.writeHead(404).end();
    });
    await new Promise<void>((ready) => server!.listen(0, '127.0.0.1', ready));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const files: Attachment[] = [
      { id: 'a'.repeat(32), name: 'big.png', contentType: 'image/png', size: picture.length, image: true, url: `${base}/media/${'a'.repeat(32)}/big.png` },
      { id: 'b'.repeat(32), name: '"><img src=x onerror=alert(1)><script>alert(2)</script>.png', contentType: 'image/png', size: picture.length, image: true, url: `${base}/media/${'b'.repeat(32)}/x.png` },
    ];
    const message: ChatMessage = {
      object: 'chat_message', id: '91', created: '2026-03-01T10:00:01.000Z', version: 1, user_id: '5', group_id: '7', chat_id: '12', type: 'chat_msg_type_normal',
      message: '<alice> look', msg_num: 1, display_name: 'Demo Bot', user_name: 'bot', profile_photo_url: '', profile_privacy: 'profile_members', email: 'bot@example.com',
    };
    const relayed = { gateway: 'general', speaker: { platform: 'irc', id: 'alice', name: 'alice' }, files };
    const logged = loggedMessage({ message, own: { relayed } } as unknown as PluginContext);
    const html = FORMATS.html;
    page = html.header({ group: 'demo', chat: 'general', timeZone: 'UTC' }) + html.entry(logged, { timeZone: 'UTC', timeFormat: 'HH:mm:ss' });

    profile = mkdtempSync(join(tmpdir(), 'groupwire-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: requireTool('/usr/bin/chromium', 'chromium'), headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 900 },
    });
    const tab = browser.pages()[0] ?? await browser.newPage();
    const dialogs: string[] = [];
    tab.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await tab.goto(`${base}/transcript.html`);
    const thumbs = tab.locator('a.thumb img');
    await expect(thumbs.count()).resolves.toBe(2);
    // (Browser code as strings: the tests are type-checked without the DOM's types.)
    await tab.waitForFunction('[...document.querySelectorAll("a.thumb img")].every((img) => img.complete && img.naturalWidth > 0)');
    const natural = await tab.evaluate<number[]>('(() => { const img = document.querySelector("a.thumb img"); return [img.naturalWidth, img.naturalHeight]; })()');
    const box = (await thumbs.first().boundingBox())!;
    expect(natural).toEqual([1200, 900]);
    expect(box.width).toBeLessThanOrEqual(320);
    expect(box.height).toBeLessThanOrEqual(240);
    expect(box.width).toBeGreaterThan(0);
    await expect(thumbs.first().getAttribute('loading')).resolves.toBe('lazy');
    await expect(tab.locator('a.thumb').first().getAttribute('href')).resolves.toBe(files[0]!.url);
    // The hostile name is the second thumbnail's alt text, nothing more: no script, no extra image, no alert.
    await expect(tab.locator('script').count()).resolves.toBe(0);
    await expect(tab.locator('img').count()).resolves.toBe(2);
    await expect(thumbs.nth(1).getAttribute('alt')).resolves.toBe(files[1]!.name);
    expect(dialogs).toEqual([]);
  });
});
