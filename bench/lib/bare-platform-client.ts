import { readFileSync } from 'node:fs';
import WebSocket from 'ws';

/**
 * The platforms bench's baseline, in a process of its own like groupwire's supervisor: a bare `ws`
 * client on a chat socket that hands each chat_message it receives straight to each platform's own
 * client library (bench/gateway-platforms/bare-<platform>.ts), and posts what people say on a platform
 * into the chat as `<name> text` — no sequencer, no plugin chain, no durable queue. With one platform it
 * is that platform's bare client; with several (the bench's bare fan-out, the same shape as the gateway
 * it is measured against) a line from one platform also goes to the others, after the chat, all in the
 * call that read it. It prints `ready` once every end is open. Its one argument is JSON:
 * { url, headers, caFile, platforms: [{ platform, settings }], selfId } (selfId: its own chat user, whose posts it does not send on).
 */
interface BareSettings {
  url: string;
  headers: Record<string, string>;
  caFile: string;
  platforms: Array<{ platform: string; settings: Record<string, unknown> }>;
  selfId: string;
}

interface BareModule {
  connect(settings: unknown): Promise<(text: string) => void>;
  listen(settings: unknown, onLine: (line: string) => void): Promise<void>;
}

const settings = JSON.parse(process.argv[2] ?? '') as BareSettings;
const ends = await Promise.all(settings.platforms.map(async ({ platform, settings: own }) => {
  const module = await import(`../gateway-platforms/bare-${platform}.ts`) as BareModule;
  return { platform, own, module, post: await module.connect(own) };
}));
const ws = new WebSocket(settings.url, { headers: settings.headers, ca: readFileSync(settings.caFile, 'utf8'), perMessageDeflate: false });
// Waited for after the platforms' listeners are up, which may take longer than the socket's opening.
const opened = new Promise((open) => ws.once('open', open));
ws.on('message', (data) => {
  const frame = JSON.parse(data.toString()) as { object?: string; message?: string; user_id?: unknown };
  if (frame.object !== 'chat_message' || !frame.message || String(frame.user_id) === settings.selfId) return;
  for (const end of ends) end.post(frame.message);
});
for (const end of ends) {
  await end.module.listen(end.own, (line) => {
    ws.send(JSON.stringify({ object: 'chat_post', message: line }));
    for (const other of ends) if (other !== end) other.post(line);
  });
}
ws.on('error', (error) => {
  process.stderr.write(`bare ${ends.map((end) => end.platform).join('+')} client: ${error.message}\n`);
  process.exit(1);
});
await opened;
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  ws.close();
  process.exit(0);
});
