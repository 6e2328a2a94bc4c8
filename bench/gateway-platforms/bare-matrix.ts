import { createClient, Method } from 'matrix-js-sdk';
import { logger } from 'matrix-js-sdk/lib/logger.js';

/**
 * The bare Matrix client of the platforms bench: matrix-js-sdk's HTTP layer, as the relay uses it,
 * one PUT /send per line as it comes (no queue, no retry).
 */
export async function connect(settings: { homeserver: string; token: string; userId: string; room: string }): Promise<(text: string) => void> {
  logger.setLevel('silent');
  const client = createClient({ baseUrl: settings.homeserver, accessToken: settings.token, userId: settings.userId });
  let txn = 0;
  return (text) => {
    txn += 1;
    void client.http.authedRequest(Method.Put, `/rooms/${encodeURIComponent(settings.room)}/send/m.room.message/bare${process.pid}-${txn}`, undefined, { msgtype: 'm.notice', body: `carol: ${text}` })
      .catch((error: unknown) => process.stderr.write(`bare matrix: ${String(error)}\n`));
  };
}
