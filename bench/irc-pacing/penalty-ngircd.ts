import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { accepts, freePort } from '../../test/helpers/ports.js';
import { BINARIES } from '../../test/helpers/irc-server.js';

/**
 * ngircd on loopback with its DEFAULT flood penalties (no MaxPenaltyTime line: the test servers turn
 * them off, this bench is about them). ngircd then reads a client's commands at about 3 a second
 * after a short burst, PING included: the throttle a real network puts on a relay.
 */
export class PenaltyNgircd {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly child: ChildProcess,
  ) {}

  static async start(): Promise<PenaltyNgircd> {
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-irc-pacing-'));
    chmodSync(dir, 0o755); // ngircd drops root for "nobody", which must read its config
    const port = await freePort();
    writeFileSync(join(dir, 'ircd.conf'), `[Global]
\tName = irc.pacing.test
\tInfo = groupwire pacing bench
\tAdminInfo1 = groupwire
\tAdminInfo2 = bench
\tAdminEMail = bench@example.com
\tListen = 127.0.0.1
\tPorts = ${port}
\tMotdPhrase = groupwire bench
[Limits]
\tMaxConnectionsIP = 0
\tMaxJoins = 0
\tMaxNickLength = 30
[Options]
\tDNS = no
\tIdent = no
\tPAM = no
`, { mode: 0o644 });
    const child = spawn(BINARIES.ngircd, ['-n', '-f', join(dir, 'ircd.conf')], { stdio: 'ignore', cwd: dir });
    const deadline = Date.now() + 15_000;
    while (!(await accepts(port))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error('ngircd did not start');
      await sleep(50);
    }
    return new PenaltyNgircd(port, dir, child);
  }

  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((done) => this.child.once('exit', done));
      this.child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
