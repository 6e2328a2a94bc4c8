import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accepts, freePort } from './ports.js';
import { requireTool } from './require-tool.js';

/**
 * A real ZNC bouncer from Debian (package znc) for the relay's catch-up tests: in the foreground on a
 * free loopback port, with its own data dir and a generated config. One user (`gw`, password
 * `secret`) with one network (`test`) on the IRC server given, in the channels given; clients log in
 * with `PASS gw/test:secret`. The buffer is kept after playback (`AutoClearChanBuffer = false`, as
 * docs/plugins/relay-irc.md asks): a client that dies while the buffer is played back gets it again.
 */
export const ZNC = '/usr/bin/znc';
const NOBODY = 65534;

export class ZncBouncer {
  readonly dir = mkdtempSync(join(tmpdir(), 'groupwire-znc-'));
  port = 0;
  private child: ChildProcess | undefined;
  private output = '';

  private constructor(private readonly ircPort: number, private readonly channels: string[], private readonly nick: string) {}

  static async start(ircPort: number, channels: string[], nick = 'gwbot'): Promise<ZncBouncer> {
    const znc = new ZncBouncer(ircPort, channels, nick);
    znc.port = await freePort();
    await znc.run();
    return znc;
  }

  /** What a relay gives as `password` (PASS): user, network and password. */
  get password(): string {
    return 'gw/test:secret';
  }

  get log(): string {
    return this.output;
  }

  async close(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((done) => {
        child.once('exit', () => done());
        child.kill('SIGKILL');
      });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async run(): Promise<void> {
    mkdirSync(join(this.dir, 'configs'), { recursive: true });
    writeFileSync(join(this.dir, 'configs', 'znc.conf'), this.config());
    // As root ZNC waits 30 s before it starts (a warning to press Ctrl-C): run it as nobody instead.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) for (const path of [this.dir, join(this.dir, 'configs'), join(this.dir, 'configs', 'znc.conf')]) chownSync(path, NOBODY, NOBODY);
    const child = spawn(requireTool(ZNC, 'znc'), ['--datadir', this.dir, '--foreground'], {
      stdio: ['ignore', 'pipe', 'pipe'], ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    this.child = child;
    const collect = (chunk: Buffer) => {
      this.output += chunk.toString();
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`znc exited at start:\n${this.output}`);
      if (await accepts(this.port)) return;
      if (Date.now() > deadline) throw new Error(`znc did not accept connections on ${this.port}:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private config(): string {
    return `Version = 1.8.2
ConnectDelay = 0
ServerThrottle = 0
MaxBufferSize = 1000
<Listener l>
\tHost = 127.0.0.1
\tPort = ${this.port}
\tIPv4 = true
\tIPv6 = false
\tSSL = false
\tAllowIRC = true
\tAllowWeb = false
</Listener>
<User gw>
\t<Pass password>
\t\tMethod = plain
\t\tHash = secret
\t</Pass>
\tAdmin = true
\tNick = ${this.nick}
\tAltNick = ${this.nick}_
\tIdent = ${this.nick}
\tRealName = groupwire relay
\tAutoClearChanBuffer = false
\tAutoClearQueryBuffer = true
\tChanBufferSize = 500
\tMultiClients = true
\t<Network test>
\t\tServer = 127.0.0.1 ${this.ircPort}
\t\tFloodRate = 1000
\t\tFloodBurst = 1000
${this.channels.map((channel) => `\t\t<Chan ${channel}>\n\t\t</Chan>`).join('\n')}
\t</Network>
</User>
`;
  }
}
