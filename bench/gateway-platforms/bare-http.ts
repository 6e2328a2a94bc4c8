import { createHmac, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { request } from 'undici';

/**
 * The bare HTTP client of the platforms bench: undici, as the relay uses it, one signed POST per line
 * as it comes (no queue, no retry); and an HTTP server of its own whose POSTed messages go to the chat as
 * they come.
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

export async function listen(settings: { listenPort: number }, onLine: (line: string) => void): Promise<void> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as { text: string; username: string };
      onLine(`<${message.username}> ${message.text}`);
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"queued"}');
    });
  });
  await new Promise<void>((ready) => server.listen(settings.listenPort, '127.0.0.1', ready));
}
