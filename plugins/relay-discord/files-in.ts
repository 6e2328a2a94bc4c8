import type { APIAttachment } from '@discordjs/core';
import { request } from 'undici';
import type { IncomingFile } from '../../src/index.js';

/**
 * Where Discord serves attachments: its CDN (https://cdn.discordapp.com, and the media proxy
 * https://media.discordapp.net) for Discord's own API, else the configured `api_url`'s own origin (a
 * local Discord in tests, or a proxy in front of both). An attachment is only ever read from there: a
 * URL elsewhere in a message's attachment object is not fetched (no request forgery through it).
 */
export function discordCdnOrigins(apiUrl: string): string[] {
  const api = new URL(apiUrl);
  const discord = ['discord.com', 'discordapp.com'].some((host) => api.hostname === host || api.hostname.endsWith(`.${host}`));
  return discord ? ['https://cdn.discordapp.com', 'https://media.discordapp.net'] : [api.origin];
}

/**
 * A Discord attachment as the gateway reads it: its signed CDN URL (Discord's CDN takes no token; the
 * URL's signature is the permission), streamed.
 */
export function discordIncomingFile(attachment: Pick<APIAttachment, 'url' | 'filename' | 'content_type' | 'size'>, origins: readonly string[]): IncomingFile {
  return {
    name: attachment.filename || 'file',
    ...(attachment.content_type ? { contentType: attachment.content_type } : {}),
    ...(typeof attachment.size === 'number' ? { size: attachment.size } : {}),
    open: async (signal) => {
      let url: URL;
      try {
        url = new URL(attachment.url);
      } catch {
        throw new Error('the attachment\'s URL is not a URL');
      }
      if (!origins.includes(url.origin)) throw new Error(`not fetched: the attachment's URL is not on Discord's CDN (${origins.join(', ')})`);
      const answer = await request(url, { method: 'GET', signal });
      if (answer.statusCode !== 200) {
        await answer.body.dump();
        throw new Error(`Discord's CDN answered ${answer.statusCode} for the attachment`);
      }
      return answer.body;
    },
  };
}
