import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PluginSpec } from './supervisor.js';
import { accepts, freePort } from './ports.js';
import { requireTool } from './require-tool.js';

/**
 * Real IRC servers from Debian for the relay's tests, and a raw IRC client to watch and talk in their
 * channels. A server runs in the foreground (ngircd -n, inspircd --nofork) with a config generated in a
 * temp dir, on a free loopback port; it can be killed and started again on the same port, and its
 * password changed (config rewritten, SIGHUP) to keep clients out for a while.
 */

export const BINARIES = { ngircd: '/usr/sbin/ngircd', inspircd: '/usr/sbin/inspircd' } as const;
export type IrcServerKind = keyof typeof BINARIES;

export interface IrcServerOptions {
  kind?: IrcServerKind;
  /** A password every client must give (PASS); change it later with setPassword(). */
  password?: string;
  /** inspircd: more commands than this in one second and the client is killed for "Excess Flood". Default: no limit to speak of. */
  floodLimit?: number;
  /**
   * inspircd: channel history (mode +H, replayed on join in a `chathistory` batch) and message tags
   * (so clients that ask get each line's msgid).
   */
  history?: boolean;
  /**
   * ngircd: keep its default flood penalties (it then reads a client's commands at about 3 a second
   * after a short burst, PING included, as a real network throttles a relay). Off by default: too slow
   * for tests; the IRC pacing bench wants them.
   */
  penalties?: boolean;
  /** ngircd: also listen with TLS on `tlsPort`, with this certificate. */
  tls?: { cert: string; key: string };
}


export class IrcServer {
  readonly dir = mkdtempSync(join(tmpdir(), 'groupwire-irc-'));
  readonly kind: IrcServerKind;
  port = 0;
  tlsPort = 0;
  private child: ChildProcess | undefined;
  private output = '';
  private password: string | undefined;

  private constructor(private readonly options: IrcServerOptions) {
    this.kind = options.kind ?? 'ngircd';
    this.password = options.password;
    // ngircd drops root for "nobody", which must still read its config when it is told to re-read it.
    chmodSync(this.dir, 0o755);
  }

  static async start(options: IrcServerOptions = {}): Promise<IrcServer> {
    const server = new IrcServer(options);
    server.port = await freePort();
    if (options.tls) {
      server.tlsPort = await freePort();
      writeFileSync(join(server.dir, 'cert.pem'), options.tls.cert, { mode: 0o644 });
      writeFileSync(join(server.dir, 'key.pem'), options.tls.key, { mode: 0o644 });
    }
    await server.start();
    return server;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** What the server printed, and (inspircd) its log file. */
  get log(): string {
    const file = join(this.dir, 'ircd.log');
    return this.output + (existsSync(file) ? readFileSync(file, 'utf8') : '');
  }

  /** Starts the server (again, on the same ports) and waits until it accepts connections. */
  async start(): Promise<void> {
    if (this.running) return;
    this.writeConfig();
    const config = join(this.dir, 'ircd.conf');
    const args = this.kind === 'ngircd'
      ? ['-n', '-f', config]
      : ['--nofork', '--nopid', `--config=${config}`, ...(process.getuid?.() === 0 ? ['--runasroot'] : [])];
    const child = spawn(requireTool(BINARIES[this.kind], this.kind), args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: this.dir });
    this.child = child;
    const collect = (chunk: Buffer) => {
      this.output += chunk.toString();
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (!this.running) throw new Error(`${this.kind} exited at start:\n${this.log}`);
      if (await accepts(this.port)) return;
      if (Date.now() > deadline) throw new Error(`${this.kind} did not accept connections on ${this.port}:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** SIGKILL: the server is gone at once, without a word to its clients. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    await new Promise<void>((done) => {
      child.once('exit', () => done());
      child.kill('SIGKILL');
    });
  }

  /** A new password for clients (undefined: none), in effect when this resolves (config re-read on SIGHUP, or at the next start). */
  async setPassword(password: string | undefined): Promise<void> {
    this.password = password;
    this.writeConfig();
    if (!this.running) return;
    const marker = this.kind === 'ngircd' ? /Re-reading of configuration done/g : /Successfully rehashed server/g;
    const before = this.log.match(marker)?.length ?? 0;
    this.child!.kill('SIGHUP');
    const deadline = Date.now() + 10_000;
    while ((this.log.match(marker)?.length ?? 0) === before) {
      if (Date.now() > deadline) throw new Error(`${this.kind} did not re-read its config:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async close(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private writeConfig(): void {
    writeFileSync(join(this.dir, 'motd.txt'), 'groupwire tests\n', { mode: 0o644 });
    writeFileSync(join(this.dir, 'ircd.conf'), this.kind === 'ngircd' ? this.ngircdConfig() : this.inspircdConfig(), { mode: 0o644 });
  }

  private ngircdConfig(): string {
    return `[Global]
\tName = irc.ngircd.test
\tInfo = groupwire test server
\tAdminInfo1 = groupwire
\tAdminInfo2 = tests
\tAdminEMail = tests@example.com
\tListen = 127.0.0.1
\tPorts = ${this.port}
\tMotdPhrase = groupwire tests
${this.password ? `\tPassword = ${this.password}\n` : ''}[Limits]
\tMaxConnectionsIP = 0
\tMaxJoins = 0
\tMaxNickLength = 30
${this.options.penalties ? '' : '\t# Penalties off: with them ngircd reads about 3 commands a second from a client, too slow for tests.\n\tMaxPenaltyTime = 0\n'}[Options]
\tDNS = no
\tIdent = no
\tPAM = no
${this.options.tls ? `[SSL]\n\tCertFile = ${join(this.dir, 'cert.pem')}\n\tKeyFile = ${join(this.dir, 'key.pem')}\n\tPorts = ${this.tlsPort}\n` : ''}`;
  }

  private inspircdConfig(): string {
    const limit = this.options.floodLimit ?? 100_000;
    return `<server name="irc.inspircd.test" description="groupwire test server" network="GroupwireTest">
<admin name="groupwire" nick="groupwire" email="tests@example.com">
<bind address="127.0.0.1" port="${this.port}" type="clients">
<connect name="main" allow="*" timeout="20" pingfreq="120" hardsendq="1M" softsendq="64K" recvq="64K"
         threshold="${limit}" commandrate="${limit * 1000}" fakelag="no" localmax="1000" globalmax="1000" maxchans="100"
         resolvehostnames="no" useident="no"${this.password ? ` password="${this.password}"` : ''}>
<files motd="${join(this.dir, 'motd.txt')}">
<options defaultmodes="not">
<log method="file" type="* -USERINPUT -USEROUTPUT" level="default" target="${join(this.dir, 'ircd.log')}">
<module name="cap">
<module name="ircv3">
<module name="ircv3_batch">
<module name="ircv3_echomessage">
<module name="ircv3_labeledresponse">
<module name="ircv3_servertime">
<module name="ircv3_msgid">
${this.options.history ? '<module name="ircv3_ctctags">\n<module name="chanhistory">\n<chanhistory bots="yes" notice="yes" maxlines="500">\n' : ''}`;
  }
}

/** One PRIVMSG (or NOTICE) a watcher saw in a channel. */
export interface Said {
  command: string;
  nick: string;
  target: string;
  text: string;
}

/**
 * A plain IRC client on a raw socket: registers, joins, answers PING, and keeps every PRIVMSG and NOTICE
 * it sees. It writes exactly what it is given, so tests can send colour codes, CTCP and the like.
 */
export class IrcWatcher {
  readonly said: Said[] = [];
  readonly lines: string[] = [];
  private buffer = '';

  private constructor(
    private readonly socket: Socket,
    readonly nick: string,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', () => undefined);
  }

  /** Connects, registers (asking for the IRCv3 `caps` given) and joins `channels`; resolves once the joins are confirmed. */
  static async connect(port: number, nick: string, channels: string[], password?: string, caps: string[] = []): Promise<IrcWatcher> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((ready, fail) => {
      socket.once('connect', ready);
      socket.once('error', fail);
    });
    const watcher = new IrcWatcher(socket, nick);
    const capRequest = caps.length > 0 ? `CAP REQ :${caps.join(' ')}\r\n` : '';
    watcher.send(`${capRequest}${password ? `PASS ${password}\r\n` : ''}NICK ${nick}\r\nUSER ${nick} 0 * :groupwire test watcher${caps.length > 0 ? '\r\nCAP END' : ''}`);
    await watcher.waitForLine(new RegExp(`^(?:@\\S+ )?:\\S+ 001 ${nick} `), 10_000);
    for (const channel of channels) {
      watcher.send(`JOIN ${channel}`);
      await watcher.waitForLine(new RegExp(`^(?:@\\S+ )?:${nick}!\\S+ JOIN :?${channel.replace(/[#\\]/g, '\\$&')}$`, 'i'), 10_000);
    }
    return watcher;
  }

  /** Raw text, sent as is (CRLF appended). */
  send(raw: string): void {
    this.socket.write(`${raw}\r\n`);
  }

  /** What was said to `channel` by others, as "nick: text". */
  texts(channel: string, from?: string): string[] {
    return this.said.filter((s) => s.command === 'PRIVMSG' && s.target.toLowerCase() === channel.toLowerCase() && (!from || s.nick === from)).map((s) => s.text);
  }

  async waitForLine(pattern: RegExp, timeoutMs = 20_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.find((l) => pattern.test(l));
      if (line) return line;
      if (Date.now() > deadline) throw new Error(`${this.nick} did not see ${pattern} in:\n${this.lines.slice(-20).join('\n')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n')) !== -1) {
      const line = this.buffer.slice(0, end).replace(/\r$/, '');
      this.buffer = this.buffer.slice(end + 1);
      this.lines.push(line);
      if (line.startsWith('PING ')) this.send(`PONG ${line.slice(5)}`);
      const message = /^(?:@\S+ )?:([^!\s]+)\S* (PRIVMSG|NOTICE) (\S+) :?(.*)$/.exec(line);
      if (message) this.said.push({ nick: message[1]!, command: message[2]!, target: message[3]!, text: message[4]! });
    }
  }
}

/** The relay in a bot's plugins, against `server`, paced fast for tests; `options` are merged over the defaults. */
export function relayPlugin(server: IrcServer, options: Record<string, unknown> = {}): PluginSpec {
  return {
    use: 'relay-irc',
    with: {
      server: '127.0.0.1', port: server.port, tls: false, nick: 'gwbot', channels: { general: '#general' },
      rate: { lines_per_second: 200, burst: 20 }, reconnect: { min_delay_ms: 200, max_delay_ms: 1000 },
      ...options,
    },
  };
}
