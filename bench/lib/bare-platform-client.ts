import { readFileSync } from 'node:fs';
import WebSocket from 'ws';

/**
 * The platforms bench's baseline for one platform, in a process of its own like groupwire's
 * supervisor: a bare `ws` client on a chat socket that hands each chat_message it receives straight
 * to the platform's own client library (bench/gateway-platforms/bare-<platform>.ts), and posts what
 * people say on the platform into the chat as `<name> text` — no sequencer, no plugin chain, no durable
 * queue. It prints `ready` once both ends are open. Its one argument is JSON:
 * { url, headers, caFile, platform, settings, selfId } (selfId: its own chat user, whose posts it does not send on).
 */
interface BareSettings {
  url: string;
  headers: Record<string, string>;
  caFile: string;
  platform: string;
  settings: Record<string, unknown>;
  selfId: string;
}

const settings = JSON.parse(process.argv[2] ?? '') as BareSettings;
const module = await import(`../gateway-platforms/bare-${settings.platform}.ts`) as {
  connect(settings: unknown): Promise<(text: string) => void>;
  listen(settings: unknown, onLine: (line: string) => void): Promise<void>;
};
const post = await module.connect(settings.settings);
const ws = new WebSocket(settings.url, { headers: settings.headers, ca: readFileSync(settings.caFile, 'utf8'), perMessageDeflate: false });
// Waited for after the platform's listener is up, which may take longer than the socket's opening.
const opened = new Promise((open) => ws.once('open', open));
ws.on('message', (data) => {
  const frame = JSON.parse(data.toString()) as { object?: string; message?: string; user_id?: unknown };
  if (frame.object === 'chat_message' && frame.message && String(frame.user_id) !== settings.selfId) post(frame.message);
});
await module.listen(settings.settings, (line) => ws.send(JSON.stringify({ object: 'chat_post', message: line })));
ws.on('error', (error) => {
  process.stderr.write(`bare ${settings.platform} client: ${error.message}\n`);
  process.exit(1);
});
await opened;
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  ws.close();
  process.exit(0);
});
