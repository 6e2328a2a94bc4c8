import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { RawIrc } from './raw-irc.js';

/**
 * The relay-latency bench's baseline, run in a process of its own like groupwire's supervisor: a bare
 * `ws` client on a chat socket that writes each chat_message it receives straight to its own raw IRC
 * connection as `PRIVMSG <channel> :<text>` — no sequencer, no plugin chain, no queue, no confirmation.
 * It prints `ready` once the socket is open and the channel joined. Its one argument is JSON:
 * { url, headers, caFile, ircPort, nick, channel }.
 */
interface BareSettings {
  url: string;
  headers: Record<string, string>;
  caFile: string;
  ircPort: number;
  nick: string;
  channel: string;
}

const settings = JSON.parse(process.argv[2] ?? '') as BareSettings;
const irc = await RawIrc.connect(settings.ircPort, settings.nick, settings.channel);
const ws = new WebSocket(settings.url, { headers: settings.headers, ca: readFileSync(settings.caFile, 'utf8'), perMessageDeflate: false });
ws.on('message', (data) => {
  const frame = JSON.parse(data.toString()) as { object?: string; message?: string };
  if (frame.object === 'chat_message' && frame.message) irc.send(`PRIVMSG ${settings.channel} :${frame.message.replace(/[\r\n\0]/g, ' ')}`);
});
ws.on('error', (error) => {
  process.stderr.write(`bare relay: ${error.message}\n`);
  process.exit(1);
});
await new Promise((open) => ws.once('open', open));
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  ws.close();
  irc.close();
  process.exit(0);
});
