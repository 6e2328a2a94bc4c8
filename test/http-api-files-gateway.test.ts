import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, test } from 'vitest';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';
import { WebhookReceiver } from './helpers/webhook-receiver.js';

/**
 * A file POSTed to the HTTP API, end to end (#34 parts 2, 4, 5): one bot with the logger and the HTTP
 * API, a named gateway of the chat `general` and the API's channels `ops` and `dev`, and the media
 * store's listener. The file is streamed in, read into the media store by the gateway, shown in the chat
 * as a link line that downloads the same bytes, given to `dev`'s webhook and poll with that link (and
 * served by the API's own route too), and recorded by the logger (jsonl files, the html thumbnail).
 */

const TOKEN = 'gateway-files-token-0123456789';
const WEBHOOK_SECRET = 'webhook-secret-0123456789abcdef';

let env: Env | undefined;
let hook: WebhookReceiver | undefined;
afterEach(async () => {
  await env?.close();
  await hook?.close();
  env = undefined;
  hook = undefined;
});

/** A PNG's signature and IHDR chunk, then bytes (the gateway's intake checks only the first bytes). */
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]), randomBytes(40_000)]);
const NOTES = Buffer.from('step 1 failed\nstep 2 skipped\n');

function multipart(parts: Array<{ field: string; value?: string; file?: { name: string; type: string; bytes: Buffer } }>): { body: Buffer; contentType: string } {
  const boundary = `----groupwire${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="${part.field}"${part.file ? `; filename="${part.file.name}"\r\ncontent-type: ${part.file.type}` : ''}\r\n\r\n`;
    chunks.push(Buffer.from(head), part.file ? part.file.bytes : Buffer.from(part.value ?? ''), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: Buffer; headers: Record<string, unknown> }> {
  const answer = await request(url, { headers });
  return { status: answer.statusCode, headers: answer.headers, bytes: Buffer.from(await answer.body.arrayBuffer()) };
}

const linkIn = (line: string) => /(http:\/\/\S+)\]$/.exec(line)?.[1];

describe('http-api: files through the gateway', () => {
  test('a file POSTed to the API reaches the chat as a working link, the other API channel\'s webhook and poll with its link, and the logger\'s transcripts', { timeout: 60_000 }, async () => {
    hook = await WebhookReceiver.start(WEBHOOK_SECRET);
    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [
        { use: 'logger', with: { dir: './transcripts', format: ['jsonl', 'text', 'html'], flush_interval_ms: 50 } },
        {
          use: 'http-api',
          with: { listen: { host: '127.0.0.1', port: 0 }, clients: [{ name: 'ci', token: TOKEN }], webhooks: [{ url: hook.url, secret: WEBHOOK_SECRET, channels: ['dev'] }] },
        },
      ],
    }], [{ name: 'builds', endpoints: [{ chat: 'general' }, { http: 'ops' }, { http: 'dev' }] }]);
    const config = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(env.configFile, stringify({ ...config, media: { listen: '127.0.0.1:0' } }));
    const supervisor = await env.start();
    const stats = () => (supervisor.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['http-api']!;
    const port = await waitFor('the HTTP API listening', () => stats().port);
    const base = `http://127.0.0.1:${port}`;

    const { body, contentType } = multipart([
      { field: 'text', value: 'the failing page' },
      { field: 'username', value: 'deploybot' },
      { field: 'file', file: { name: 'shot.png', type: 'image/png', bytes: PNG } },
      { field: 'file', file: { name: 'notes.txt', type: 'text/plain', bytes: NOTES } },
    ]);
    const posted = await request(`${base}/gateways/ops/messages`, { method: 'POST', body, headers: { 'content-type': contentType, authorization: `Bearer ${TOKEN}` } });
    expect(posted.statusCode).toBe(202);
    await posted.body.dump();

    // The chat: the text, then a link line per file, each with the speaker; the links give the bytes sent.
    const bot = env.client('bot');
    const general = (await chatOf(bot, 'general'))!;
    const post = await waitFor('the line in the chat', async () => (await history(bot, general.id)).map((m) => m.message).find((t) => t.startsWith('<[api] deploybot> the failing page')));
    const [text, image, notes] = post.split('\n');
    expect(text).toBe('<[api] deploybot> the failing page');
    expect(image).toMatch(/^<\[api\] deploybot> \[image: shot\.png http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/shot\.png\]$/);
    expect(notes).toMatch(/^<\[api\] deploybot> \[file: notes\.txt http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/notes\.txt\]$/);
    const picture = await get(linkIn(image!)!);
    expect([picture.status, picture.headers['content-type'], picture.bytes.equals(PNG)]).toEqual([200, 'image/png', true]);
    expect((await get(linkIn(notes!)!)).bytes.equals(NOTES)).toBe(true);
    await waitFor('the upload removed once the line was taken', () => readdirSync(join(env!.stateDir, 'bots', 'bot0', 'plugins', 'http-api', 'uploads')).length === 0);

    // The other API channel: the webhook and the poll carry the files with the media store's links.
    await waitFor('the webhook got the line', () => hook!.lines.length === 1);
    const files = hook.lines[0]!.files as Array<{ name: string; url: string; size: number; image: boolean; id: string }>;
    expect(files.map((f) => [f.name, f.size, f.image, f.url])).toEqual([['shot.png', PNG.length, true, linkIn(image!)], ['notes.txt', NOTES.length, false, linkIn(notes!)]]);
    const poll = await get(`${base}/gateways/dev/messages`, { authorization: `Bearer ${TOKEN}` });
    expect((JSON.parse(poll.bytes.toString()) as { messages: Array<{ files: unknown }> }).messages.map((m) => m.files)).toEqual([files]);
    // The API's own route serves it too, behind its auth; the channel the file came from gets nothing back (no loop).
    const own = await get(`${base}/gateways/dev/files/${files[0]!.id}/shot.png`, { authorization: `Bearer ${TOKEN}` });
    expect([own.status, own.bytes.equals(PNG)]).toEqual([200, true]);
    expect((await get(`${base}/gateways/dev/files/${files[0]!.id}/shot.png`)).status).toBe(401);
    const ops = await get(`${base}/gateways/ops/messages`, { authorization: `Bearer ${TOKEN}` });
    expect((JSON.parse(ops.bytes.toString()) as { messages: unknown[] }).messages).toEqual([]);

    // The logger: jsonl records the files, html shows the image as a thumbnail linking to the stored file.
    const dir = join(env.dir, 'transcripts', 'demo', 'general');
    const entry = await waitFor('the transcript entry', () => {
      const day = readdirSync(dir).find((name) => name.endsWith('.jsonl'));
      return day ? readFileSync(join(dir, day), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).find((m) => Array.isArray(m.files)) : undefined;
    });
    expect(entry.files).toEqual([
      { name: 'shot.png', content_type: 'image/png', size: PNG.length, image: true, url: linkIn(image!) },
      { name: 'notes.txt', content_type: 'text/plain', size: NOTES.length, image: false, url: linkIn(notes!) },
    ]);
    expect(entry.relayed_from).toMatchObject({ platform: 'http', id: 'ci', name: '[api] deploybot', gateway: 'builds' });
    const html = await waitFor('the html entry', () => {
      const day = readdirSync(dir).find((name) => name.endsWith('.html'));
      const page = day ? readFileSync(join(dir, day), 'utf8') : '';
      return page.includes('<img ') ? page : undefined;
    });
    expect(html).toContain(`<a class="thumb" href="${linkIn(image!)}" rel="nofollow noopener noreferrer"><img src="${linkIn(image!)}" alt="shot.png" loading="lazy"></a>`);
    expect(html).toContain(`<a href="${linkIn(notes!)}" rel="nofollow noopener noreferrer">notes.txt</a>`);
  });
});
