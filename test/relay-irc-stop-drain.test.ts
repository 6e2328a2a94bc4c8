import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, expect, test } from 'vitest';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * A clean stop (SIGTERM, a worker handing its units over) waits for the IRC server to confirm the lines
 * it has in flight, so the next start (or the next worker) does not send them again. On a server without
 * labeled-response the confirmation is the PONG to a PING after the lines; under load it can take
 * seconds. A tiny scripted server (enough IRC for the relay) answers each PING 2.5 s late and counts the
 * PRIVMSGs: a line said in the chat just before the stop reaches it once, across the stop and a start.
 * (Before: the stop waited 1.5 s, the line was still unconfirmed, and the start sent it again.)
 */

class SlowPongServer {
  readonly privmsgs: string[] = [];
  port = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly pongDelayMs: number) {
    this.server = createServer((socket) => this.serve(socket));
  }

  async listen(): Promise<void> {
    await new Promise<void>((ready) => this.server.listen(0, '127.0.0.1', ready));
    this.port = (this.server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((closed) => this.server.close(closed));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    let nick = '*';
    let buffer = '';
    const send = (line: string) => socket.writable && socket.write(`${line}\r\n`);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\n'); end !== -1; end = buffer.indexOf('\n')) {
        const line = buffer.slice(0, end).replace(/\r$/, '');
        buffer = buffer.slice(end + 1);
        const [command = '', ...params] = line.split(' ');
        if (command === 'CAP' && params[0] === 'LS') send(':irc.test CAP * LS :');
        else if (command === 'NICK') nick = params[0]!;
        else if (command === 'USER') {
          send(`:irc.test 001 ${nick} :Welcome`);
          send(`:irc.test 005 ${nick} CHANTYPES=# :are supported`);
          send(`:irc.test 422 ${nick} :No MOTD`);
        } else if (command === 'PING') {
          const token = params.join(' ');
          // The relay's own confirmation PINGs (gw...) are answered late; irc-framework's keep-alives at once.
          setTimeout(() => send(`:irc.test PONG irc.test ${token}`), token.includes('gw') ? this.pongDelayMs : 0);
        } else if (command === 'JOIN') {
          send(`:${nick}!gw@127.0.0.1 JOIN ${params[0]}`);
          send(`:irc.test 366 ${nick} ${params[0]} :End of /NAMES list.`);
        } else if (command === 'PRIVMSG') this.privmsgs.push(line);
        else if (command === 'QUIT') socket.end();
      }
    });
  }
}

let env: Env | undefined;
let server: SlowPongServer | undefined;

afterAll(async () => {
  await env?.close();
  await server?.close();
});

test('a line in flight at a clean stop is confirmed before the stop ends, and not sent again at the next start', { timeout: 60_000 }, async () => {
  server = new SlowPongServer(2_500);
  await server.listen();
  env = await makeEnv([]);
  env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'relay-irc', with: {
    server: '127.0.0.1', port: server.port, tls: false, nick: 'gwbot', channels: { general: '#general' }, rate: 'off',
  } }] }]);
  await env.start();
  await waitFor('the relay in #general', () => env!.log.lines.some((line) => /joined/i.test(String(line.msg))));
  await post(env.svc, 'general', 'carol', 'just before the stop');
  await waitFor('the line on IRC', () => server!.privmsgs.some((line) => line.includes('just before the stop')));
  // Stopped while the line's confirming PONG is still 2.5 s away.
  await env.supervisor!.stop();
  await env.start();
  await post(env.svc, 'general', 'carol', 'after the start');
  await waitFor('the next line on IRC', () => server!.privmsgs.some((line) => line.includes('after the start')));
  expect(server.privmsgs.filter((line) => line.includes('just before the stop'))).toHaveLength(1);
});
