import WebSocket from 'ws';
import type { ClientAccess } from './client-access.js';
import { errorFromObject, ResponseFormatError } from './errors.js';
import type { Id } from './types.js';
import { parseWireJson } from './wire-json.js';

/** Which chat_sub's socket GroupsClient.openChatSocket opens, and how. */
export interface ChatSocketOptions {
  /** The caller's chat_sub (joinChat answers it), not the chat's id. */
  chatsubId: Id;
  /** Skip the 50 most recent messages on connect. */
  noHistory?: boolean;
  /** Abandon the handshake after this long (default 15 s). */
  handshakeTimeoutMs?: number;
}

/**
 * Opens `wss://.../api/v1/chatdata` for a chat_sub with the client's cookie or token and csrf. The
 * promise settles when the socket is open; a refused upgrade rejects with the matching error class
 * (`closed chat`, `invalid chatsub_id`, `expired`, `rate_limit`, ...). Reconnecting is the caller's job.
 */
export async function openChatSocket(client: ClientAccess, options: ChatSocketOptions): Promise<WebSocket> {
  const csrf = await client.csrf();
  const query = new URLSearchParams({ chatsub_id: options.chatsubId, csrf });
  if (options.noHistory) query.set('no_history', 'true');
  const url = `${client.baseUrl.replace(/^https:/, 'wss:')}/api/v1/chatdata?${query}`;
  const ws = new WebSocket(url, {
    headers: client.authHeaders(),
    perMessageDeflate: false,
    handshakeTimeout: options.handshakeTimeoutMs ?? 15_000,
    // One TLS context and resumed TLS sessions for all of the client's sockets.
    createConnection: (connectOptions: object) => client.transport.connectTls(connectOptions),
  });
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => {
      ws.removeAllListeners('open');
      // A refused upgrade may leave the connection up (keep-alive): nothing more is wanted from it.
      ws.terminate();
      reject(error);
    };
    ws.once('open', () => {
      ws.removeListener('error', fail);
      resolve(ws);
    });
    ws.once('error', fail);
    ws.once('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = response.statusCode ?? 0;
        const retryAfter = response.headers['retry-after'];
        try {
          const body = parseWireJson(text) as { object?: string; type?: unknown; extra?: unknown };
          if (body?.object !== 'error') throw new Error('not an error object');
          fail(errorFromObject(body, status, 'chatdata', Array.isArray(retryAfter) ? retryAfter[0] : retryAfter));
        } catch {
          fail(new ResponseFormatError('chatdata', status, String(response.headers['content-type'] ?? ''), text.slice(0, 200)));
        }
      });
      response.on('error', fail);
    });
  });
}
