import { afterAll, expect, test } from 'vitest';
import { ScriptedIrcServer, type Send } from './helpers/scripted-irc-server.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * A clean stop (SIGTERM, a worker handing its units over) waits for the IRC server to confirm the lines
 * it has in flight, so the next start (or the next worker) does not send them again. On a server without
 * labeled-response the confirmation is the PONG to a PING after the lines; under load it can take
 * seconds. A tiny scripted server (enough IRC for the relay) answers each PING 2.5 s late and counts the
 * PRIVMSGs: a line said in the chat just before the stop reaches it once, across the stop and a start.
 * (Before: the stop waited 1.5 s, the line was still unconfirmed, and the start sent it again.)
 */

class SlowPongServer extends ScriptedIrcServer {
  readonly privmsgs: string[] = [];

  constructor(private readonly pongDelayMs: number) {
    super({ caps: '' });
  }

  protected command(command: string, params: string[], line: string, send: Send): boolean {
    if (command === 'PRIVMSG') {
      this.privmsgs.push(line);
      return true;
    }
    // The relay's own confirmation PINGs (gw...) are answered late; irc-framework's keep-alives as ever.
    if (command !== 'PING' || !params.join(' ').includes('gw')) return false;
    setTimeout(() => send(`:irc.test PONG irc.test ${params.join(' ')}`), this.pongDelayMs);
    return true;
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
