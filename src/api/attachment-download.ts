import { request } from 'undici';
import type { Readable } from 'node:stream';
import type { ClientAccess } from './client-access.js';

/** The download_url is not the service's own: the client sends its session nowhere else. */
export class ForeignDownloadError extends Error {
  constructor(url: string) {
    super(`not a download of this service: ${safeOrigin(url)}`);
    this.name = 'ForeignDownloadError';
  }
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'not a URL';
  }
}

/**
 * Opens an attachment's `download_url` (spec 2.10's attachment element) with the client's own session,
 * streamed. Only a URL of the service's own origin and base path is fetched: the session's cookie or
 * token never goes to a host an archive message names (docs/protocol.md "Attachments"). A refusal
 * answers the service's error object, thrown as its error class; a lost session is mended and tried
 * once more, as for any call.
 */
export async function openAttachment(client: ClientAccess, downloadUrl: string, signal?: AbortSignal): Promise<Readable> {
  let url: URL;
  try {
    url = new URL(downloadUrl);
  } catch {
    throw new ForeignDownloadError(downloadUrl);
  }
  const base = new URL(client.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  if (url.origin !== base.origin || !url.pathname.startsWith(`${basePath}/`) || url.username !== '' || url.password !== '') throw new ForeignDownloadError(downloadUrl);
  return client.run('files', 'GET', async () => {
    // No redirects are followed (undici's default): a redirect elsewhere is no file of this service.
    const answer = await request(url, { method: 'GET', dispatcher: client.transport.dispatcher, headers: client.authHeaders(), signal });
    // The file itself (whatever its type, a JSON file too); a refusal is the error object with its HTTP status (docs/protocol.md).
    if (answer.statusCode === 200) return answer.body;
    await client.transport.readJson('files', { status: answer.statusCode, headers: answer.headers, body: answer.body });
    throw new Error(`the download answered ${answer.statusCode}, not a file`);
  }, { retry: false });
}
