import type WebSocket from 'ws';
import { Agent, request } from 'undici';
import { IrcServer } from '../../test/helpers/irc-server.js';
import { member } from '../lib/member.js';
import { RawIrc } from '../lib/raw-irc.js';
import { startServiceProcess, type ServiceProcess } from '../lib/service-process.js';
import type { Origin, Tally } from './tally.js';

/**
 * The far ends of the long benches, all in the bench process (one clock): the local service and
 * ngircd in processes of their own; carol, a member who speaks in the chat, and bob, who watches it;
 * a talker on IRC and a watcher there (who counts only the bot's PRIVMSGs); an HTTP client that POSTs
 * to the bot's HTTP API and reads its event stream.
 */
export const IRC_CHANNEL = '#soak';
export const BOT_NICK = 'gwbot';
export const HTTP_CHANNEL = 'ops';
export const HTTP_TOKEN = 'soak-bench-token-0123456789abcdef';

export interface Sides {
  service: ServiceProcess;
  irc: IrcServer;
  /** Says one line from `origin` (c: carol in the chat, i: the IRC talker, h: a POST to the HTTP API). */
  say(origin: Origin, ping?: boolean): void;
  /** POSTs refused or failed (a 503 when the API's intake is full, a network error). */
  readonly postFailures: Map<string, number>;
  /** Opens the HTTP API's event stream at `httpUrl` (retrying until the API listens). */
  readStream(httpUrl: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startSides(tally: Tally): Promise<Sides> {
  const closers: Array<() => unknown> = [];
  const close = async () => {
    for (const closer of closers.splice(0).reverse()) {
      try {
        await closer();
      } catch {
        // the rest is still closed
      }
    }
  };
  try {
    const service = await startServiceProcess();
    closers.push(() => service.stop());
    const irc = await IrcServer.start();
    closers.push(() => irc.close());
    const bob = await member(service, 'bob@example.com', 'bob-demo');
    closers.push(() => bob.client.close());
    const carol = await member(service, 'carol@example.com', 'carol-demo');
    closers.push(() => carol.client.close());
    const watcher = await bob.client.openChatSocket({ chatsubId: bob.chatsubId, noHistory: true });
    closers.push(() => watcher.close());
    watchChat(watcher, tally);
    const speaker = await carol.client.openChatSocket({ chatsubId: carol.chatsubId, noHistory: true });
    closers.push(() => speaker.close());
    const talker = await RawIrc.connect(irc.port, 'talker', IRC_CHANNEL);
    closers.push(() => talker.close());
    const ircWatcher = await RawIrc.connect(irc.port, 'watcher', IRC_CHANNEL);
    closers.push(() => ircWatcher.close());
    const fromBot = `:${BOT_NICK}!`;
    ircWatcher.onLine = (line, at) => {
      if (line.startsWith(fromBot) && line.includes(' PRIVMSG ')) tally.seen('irc', line, at);
    };
    const http = new Agent({ connections: 8 });
    closers.push(() => http.close());
    const stopStream = new AbortController();
    closers.push(() => stopStream.abort());
    let httpUrl: string | undefined;
    const postFailures = new Map<string, number>();
    const failed = (why: string) => postFailures.set(why, (postFailures.get(why) ?? 0) + 1);

    const post = (text: string) => {
      request(`${httpUrl}/gateways/${HTTP_CHANNEL}/messages`, {
        method: 'POST', dispatcher: http,
        headers: { authorization: `Bearer ${HTTP_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text, username: 'bench' }),
      }).then(async (answer) => {
        await answer.body.text();
        if (answer.statusCode !== 202) failed(`HTTP ${answer.statusCode}`);
      }, (error: Error) => failed(error.message));
    };
    return {
      service, irc, postFailures, close,
      say(origin, ping = false) {
        const { text } = tally.say(origin, ping);
        if (origin === 'c' || origin === 'p') speaker.send(JSON.stringify({ object: 'chat_post', message: text }));
        else if (origin === 'i' || origin === 'q') talker.send(`PRIVMSG ${IRC_CHANNEL} :${text}`);
        else post(text);
      },
      async readStream(url, timeoutMs = 60_000) {
        httpUrl = url;
        const deadline = performance.now() + timeoutMs;
        for (;;) {
          try {
            const answer = await request(`${url}/gateways/${HTTP_CHANNEL}/events`, {
              dispatcher: http, signal: stopStream.signal, bodyTimeout: 0,
              headers: { accept: 'text/event-stream', authorization: `Bearer ${HTTP_TOKEN}` },
            });
            if (answer.statusCode !== 200) throw new Error(`event stream: HTTP ${answer.statusCode}`);
            void readEvents(answer.body, tally);
            return;
          } catch (error) {
            if (performance.now() > deadline) throw error;
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A member's chat socket: every chat_message frame, stamped when the socket handed it over. */
function watchChat(socket: WebSocket, tally: Tally): void {
  socket.on('message', (data) => {
    const at = performance.now();
    const frame = JSON.parse(data.toString()) as { object?: string; message?: unknown };
    if (frame.object === 'chat_message' && typeof frame.message === 'string') tally.seen('chat', frame.message, at);
  });
}

/** The event stream's `data:` lines, each stamped when its chunk arrived. Ends quietly when the stream is aborted or closed. */
async function readEvents(body: AsyncIterable<Buffer>, tally: Tally): Promise<void> {
  let buffer = '';
  try {
    for await (const chunk of body) {
      const at = performance.now();
      buffer += chunk.toString('utf8');
      let end: number;
      while ((end = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 1);
        if (line.startsWith('data:')) tally.seen('http', line, at);
      }
    }
  } catch {
    // aborted at the end of the bench
  }
}
