import { createHmac, randomUUID } from 'node:crypto';
import { request } from 'undici';

/**
 * The bare HTTP client of the platforms bench: undici, as the relay uses it, one signed POST per line
 * as it comes (no queue, no retry).
 */
export async function connect(settings: { url: string; secret: string }): Promise<(text: string) => void> {
  return (text) => {
    const body = JSON.stringify({ id: randomUUID(), kind: 'message', text, speaker: { platform: 'chat', id: '', name: 'carol' }, time: new Date().toISOString() });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `sha256=${createHmac('sha256', settings.secret).update(`${timestamp}.${body}`).digest('hex')}`;
    void request(settings.url, {
      method: 'POST', body,
      headers: { 'content-type': 'application/json', 'x-groupwire-timestamp': timestamp, 'x-groupwire-signature': signature, 'idempotency-key': JSON.parse(body).id },
    }).then((answer) => answer.body.dump()).catch((error: unknown) => process.stderr.write(`bare http: ${String(error)}\n`));
  };
}
