import { createClient, Method, type IRequestOpts } from 'matrix-js-sdk';
import { logger } from 'matrix-js-sdk/lib/logger.js';

/**
 * The bare Matrix client of the platforms bench: matrix-js-sdk's HTTP layer, as the relay uses it,
 * one PUT /send per line as it comes (no queue, no retry); and a /sync long-poll whose people's
 * messages go to the chat as they come.
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

interface SyncAnswer {
  next_batch: string;
  rooms?: { join?: Record<string, { timeline?: { events?: Array<{ type: string; sender: string; content: { body?: string } }> } }> };
}

export async function listen(settings: { homeserver: string; token: string; userId: string; room: string }, onLine: (line: string) => void): Promise<void> {
  const client = createClient({ baseUrl: settings.homeserver, accessToken: settings.token, userId: settings.userId });
  let since = (await client.http.authedRequest<SyncAnswer>(Method.Get, '/sync', { timeout: '0' })).next_batch;
  void (async () => {
    for (;;) {
      const answer = await client.http.authedRequest<SyncAnswer>(Method.Get, '/sync', { timeout: '30000', since }, undefined, { localTimeoutMs: 60_000 } as IRequestOpts)
        .catch(() => undefined);
      if (!answer) continue;
      since = answer.next_batch;
      for (const event of answer.rooms?.join?.[settings.room]?.timeline?.events ?? []) {
        if (event.type === 'm.room.message' && event.sender !== settings.userId) onLine(`<${event.sender.replace(/^@/, '').replace(/:.*$/, '')}> ${event.content.body ?? ''}`);
      }
    }
  })();
}
