import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { localTls, type TlsMaterial } from '../src/service/tls.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/** TLS to the IRC server: verified by default; a private CA is trusted only when given as tls_ca_file. */

let tls: TlsMaterial;
let tlsDir: string;
let server: IrcServer;
let env: Env;
let alice: IrcWatcher;

beforeAll(async () => {
  tlsDir = mkdtempSync(join(tmpdir(), 'groupwire-irc-tls-'));
  tls = await localTls(tlsDir);
  server = await IrcServer.start({ kind: 'ngircd', tls: { cert: tls.cert, key: tls.key } });
  alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
  env = await makeEnv([]);
  writeFileSync(join(env.dir, 'irc-ca.pem'), tls.ca);
}, 60_000);

afterAll(async () => {
  alice?.close();
  await env?.close();
  await server?.close();
  rmSync(tlsDir, { recursive: true, force: true });
});

const relayStats = () => (env.supervisor!.stats() as any).bot0.plugins['relay-irc'] as Record<string, number>;

describe('relay-irc over TLS', () => {
  test('with tls_ca_file the server\'s certificate is trusted and lines go through', async () => {
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server, { tls: true, port: server.tlsPort, tls_ca_file: './irc-ca.pem' })] }]);
    await env.start();
    await post(env.svc, 'general', 'bob', 'over TLS');
    await waitFor('the line on IRC', () => alice.texts('#general', 'gwbot').includes('<B\u200bob M\u200bember> over TLS'));
    await env.supervisor!.stop();
    await alice.waitForLine(/^:gwbot!\S+ QUIT/);
    // A clean stop: the server's ERROR answering our QUIT is not logged as a problem.
    expect(env.log.lines.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([]);
  });

  test('without it the certificate is refused (verified by default), and the log says why', async () => {
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server, { tls: true, port: server.tlsPort })] }]);
    await env.start();
    await waitFor('the refusal logged', () => env.log.lines.some((line) => line.level === 50 && /TLS certificate is not trusted/.test(String(line.msg))));
    expect(relayStats().irc_connected).toBe(0);
    await env.supervisor!.stop();
  });
});
