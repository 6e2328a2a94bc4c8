import { request } from 'undici';
import type { IncomingFile } from '../../src/index.js';

/**
 * Slack's fields of a file in a message event (or a history message) that the relay keeps, durably
 * with the queued item: enough to read the file later through Slack's file API. Items queued by
 * versions before files were read have only `name`, `title` and `permalink`.
 */
export interface SlackFile {
  id?: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  /** The file's download URL on Slack's files host: read with the bot token (files:read). */
  url_private_download?: string;
  url_private?: string;
  /** `hidden_by_limit`, `tombstone`, `external`, ...: files Slack gives no download for. */
  mode?: string;
  permalink?: string;
}

/** The fields of a Slack file object kept with a queued item (everything else in it is dropped). */
export function keptFile(file: SlackFile): SlackFile {
  const { id, name, title, mimetype, size, url_private_download, url_private, mode } = file;
  return Object.fromEntries(Object.entries({ id, name, title, mimetype, size, url_private_download, url_private, mode })
    .filter(([, value]) => value !== undefined)) as SlackFile;
}

/**
 * Where Slack serves a workspace's files: https://files.slack.com for Slack's own Web API, else the
 * configured `api_url`'s own origin (a proxy in front of Slack, or a local Slack in tests). A file is
 * only ever read from there: a URL elsewhere in an event is not fetched (no request forgery through
 * a file object).
 */
export function slackFilesOrigin(apiUrl: string): string {
  const api = new URL(apiUrl);
  return api.hostname === 'slack.com' || api.hostname.endsWith('.slack.com') ? 'https://files.slack.com' : api.origin;
}

/** A file said in Slack, as the gateway reads it: through url_private_download with the bot token, streamed. */
export function slackIncomingFile(file: SlackFile, token: string, origin: string): IncomingFile {
  const name = file.name || file.title || 'file';
  return {
    name,
    ...(file.mimetype ? { contentType: file.mimetype } : {}),
    ...(typeof file.size === 'number' ? { size: file.size } : {}),
    open: (signal) => download(file, token, origin, signal),
  };
}

async function download(file: SlackFile, token: string, origin: string, signal: AbortSignal) {
  const where = file.url_private_download ?? file.url_private;
  if (!where) throw new Error(`Slack gives no download for this file${file.mode ? ` (${file.mode})` : ''}`);
  let url: URL;
  try {
    url = new URL(where);
  } catch {
    throw new Error('the file\'s download URL is not a URL');
  }
  // The token goes only to Slack's files host: a file object naming another host is not fetched.
  if (url.origin !== origin) throw new Error(`not fetched: the file's URL is not on Slack's files host (${origin})`);
  // No redirects followed: Slack answers the bytes, or (a token without files:read) a redirect to a sign-in page.
  const answer = await request(url, { method: 'GET', headers: { authorization: `Bearer ${token}` }, signal });
  if (answer.statusCode !== 200) {
    await answer.body.dump();
    throw new Error(`Slack answered ${answer.statusCode} for the file${answer.statusCode >= 300 && answer.statusCode < 400 ? ' (does the bot token have files:read?)' : ''}`);
  }
  const type = String(answer.headers['content-type'] ?? '');
  if (type.startsWith('text/html') && !(file.mimetype ?? '').startsWith('text/html')) {
    await answer.body.dump();
    throw new Error('Slack answered a web page, not the file (does the bot token have files:read?)');
  }
  return answer.body;
}
