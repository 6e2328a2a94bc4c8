import { FormData, request } from 'undici';
import { TOKENS } from '../../test/fakes/slack/index.js';
import type { FileSides } from './sides.js';

/**
 * The files bench's baseline: what moving a file from Slack to three platforms costs with nothing
 * around it. Plain undici requests from the bench's process: one download of the file from its
 * url_private_download with the bot token (into memory), then the three uploads at once (as the
 * gateway's relays do them, each in its own queue): Discord's webhook execute with the file as
 * `files[0]` (made once beforehand, as the relay does), Matrix's media upload and the m.image event
 * that carries it, Telegram's sendPhoto (sendDocument over its 10 MB). No queue, no durable note, no
 * store, no retry.
 */

const PHOTO_LIMIT = 10_000_000;

export class BareClient {
  private constructor(private readonly targets: ReturnType<FileSides['bareTargets']>, private readonly hook: { id: string; token: string }) {}

  /** Makes the Discord webhook once, as the relay keeps one per channel. */
  static async start(sides: FileSides): Promise<BareClient> {
    const targets = sides.bareTargets();
    const made = await request(`${targets.discord.apiUrl}/v10/channels/${targets.discord.channel}/webhooks`, {
      method: 'POST', headers: { authorization: `Bot ${targets.discord.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bare' }),
    });
    const hook = await made.body.json() as { id: string; token: string };
    if (made.statusCode !== 200) throw new Error(`bare: creating the webhook answered ${made.statusCode}`);
    return new BareClient(targets, hook);
  }

  /** Downloads the file once and uploads it to the three platforms at once. */
  async transfer(url: string, name: string, contentType: string): Promise<void> {
    const got = await request(url, { headers: { authorization: `Bearer ${TOKENS.bot}` } });
    if (got.statusCode !== 200) throw new Error(`bare: the download answered ${got.statusCode}`);
    const bytes = Buffer.from(await got.body.arrayBuffer());
    await Promise.all([this.discord(bytes, name, contentType), this.matrix(bytes, name, contentType), this.telegram(bytes, name, contentType)]);
  }

  private async discord(bytes: Buffer, name: string, contentType: string): Promise<void> {
    const form = new FormData();
    form.set('payload_json', JSON.stringify({ content: '**alice**: a picture', username: 'alice', allowed_mentions: { parse: [] }, attachments: [{ id: 0, filename: name }] }));
    form.set('files[0]', new Blob([bytes], { type: contentType }), name);
    const { apiUrl } = this.targets.discord;
    await expectOk('discord', await request(`${apiUrl}/v10/webhooks/${this.hook.id}/${this.hook.token}?wait=true`, { method: 'POST', body: form }));
  }

  private async matrix(bytes: Buffer, name: string, contentType: string): Promise<void> {
    const { homeserver, token, room } = this.targets.matrix;
    const headers = { authorization: `Bearer ${token}` };
    const uploaded = await request(`${homeserver}/_matrix/media/v3/upload?filename=${encodeURIComponent(name)}`, {
      method: 'POST', headers: { ...headers, 'content-type': contentType }, body: bytes,
    });
    if (uploaded.statusCode !== 200) return expectOk('matrix upload', uploaded);
    const { content_uri: uri } = await uploaded.body.json() as { content_uri: string };
    const content = { msgtype: 'm.image', body: name, filename: name, url: uri, info: { mimetype: contentType, size: bytes.length } };
    await expectOk('matrix send', await request(`${homeserver}/_matrix/client/v3/rooms/${encodeURIComponent(room)}/send/m.room.message/bare-${name}`, {
      method: 'PUT', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(content),
    }));
  }

  private async telegram(bytes: Buffer, name: string, contentType: string): Promise<void> {
    const { apiUrl, token, chat } = this.targets.telegram;
    const method = bytes.length <= PHOTO_LIMIT ? 'sendPhoto' : 'sendDocument';
    const form = new FormData();
    form.set('chat_id', String(chat));
    form.set(method === 'sendPhoto' ? 'photo' : 'document', 'attach://file0');
    form.set('caption', 'alice: a picture');
    form.set('file0', new Blob([bytes], { type: contentType }), name);
    await expectOk(`telegram ${method}`, await request(`${apiUrl}/bot${token}/${method}`, { method: 'POST', body: form }));
  }
}

async function expectOk(what: string, answer: Awaited<ReturnType<typeof request>>): Promise<void> {
  const text = await answer.body.text();
  if (answer.statusCode !== 200) throw new Error(`bare ${what}: ${answer.statusCode} ${text.slice(0, 200)}`);
}
