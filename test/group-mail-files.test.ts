import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, test } from 'vitest';
import { ForeignDownloadError } from '../src/api/index.js';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * group-mail's files (docs/plugins/group-mail.md "Files"), against the local service: an archive
 * message's attachment is read through its download_url with the bot's own session, stored, and shown
 * in the chat as a working link; a download_url of another host is never fetched (the session goes
 * nowhere else).
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]), Buffer.alloc(500, 9)]);

describe('group-mail: files', () => {
  test('a message\'s attachment in the archive reaches the chat as a link to the same bytes', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [{ use: 'group-mail', with: { poll: { min: '100ms', max: '400ms' }, follow: 'messages' } }],
    }], [{ name: 'news', endpoints: [{ mail: 'demo', direction: 'in' }, { chat: 'general' }] }]);
    const config = parse(readFileSync(env.configFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(env.configFile, stringify({ ...config, media: { listen: '127.0.0.1:0' } }));
    await env.start();
    const bot = env.client('bot');
    const general = (await chatOf(bot, 'general'))!;
    // Let the plugin take the archive's newest message as its position first.
    await waitFor('group-mail polled', () => ((env!.supervisor!.stats() as any).bot0.plugins['group-mail'].polls as number) >= 2);

    const alice = env.client('alice');
    const draft = await alice.newDraft({ group_name: 'demo', draft_type: 'draft_type_post', subject: 'The plan', body: 'see the picture' });
    await alice.addAttachments({ draft_id: draft.id }, [{ filename: 'plan.png', content: PNG, mediaType: 'image/png' }]);
    await alice.postDraft({ draft_id: draft.id });

    const line = await waitFor('the topic in the chat', async () => (await history(bot, general.id)).map((m) => m.message).find((t) => t.includes('The plan')));
    const [text, file] = line.split('\n');
    expect(text).toContain('The plan');
    expect(file).toMatch(/^<Alice Owner> \[image: plan\.png http:\/\/127\.0\.0\.1:\d+\/[0-9a-f]{32}\/plan\.png\]$/);
    const answer = await request(/(http:\/\/\S+)\]/.exec(file!)![1]!);
    expect(answer.statusCode).toBe(200);
    expect(Buffer.from(await answer.body.arrayBuffer()).equals(PNG)).toBe(true);
    expect(env.supervisor!.fileCounts.stored).toBe(1);
  });

  test('a download_url of another host is never fetched: the session goes nowhere else', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    let asked = 0;
    const elsewhere = createServer((_request, response) => {
      asked += 1;
      response.end('secret-stealer');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = elsewhere.address() as AddressInfo;
      const bot = env.client('bot');
      await bot.getSubs({});
      const base = new URL(env.svc.baseUrl);
      for (const url of [`http://127.0.0.1:${port}/files/messages/1/2/x.png`, `https://127.0.0.1:${port}/files/messages/1/2/x.png`,
        `${base.protocol}//user:pw@${base.host}/files/x`, 'not a url']) {
        await expect(bot.openAttachment(url)).rejects.toBeInstanceOf(ForeignDownloadError);
      }
      expect(asked).toBe(0);
    } finally {
      await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
    }
  });
});
