import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { TOKENS } from '../../test/fakes/slack/index.js';
import { stopChild } from '../lib/child.js';
import { ROOT } from '../lib/paths.js';
import type { FileSides } from './sides.js';

/** The memory floor (bench/gateway-files/stream-floor.ts) in a process of its own: moves one file per call, streamed. */
export class StreamFloor {
  /** Each waiting call's ends: resolved by the next line the floor prints, failed if it exits first. */
  private readonly answers: Array<{ done: () => void; fail: (error: Error) => void }> = [];

  private constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8');
    let out = '';
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      let newline: number;
      while ((newline = out.indexOf('\n')) >= 0) {
        out = out.slice(newline + 1);
        this.answers.shift()?.done();
      }
    });
    child.once('exit', (code, signal) => {
      for (const answer of this.answers.splice(0)) answer.fail(new Error(`the stream floor ended (${code ?? signal})`));
    });
  }

  static async start(): Promise<StreamFloor> {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/gateway-files/stream-floor.ts')], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
    const floor = new StreamFloor(child);
    await floor.next();
    return floor;
  }

  private next(): Promise<void> {
    return new Promise((done, fail) => this.answers.push({ done, fail }));
  }

  async move(url: string, target: ReturnType<FileSides['bareTargets']>['matrix'], name: string): Promise<void> {
    const answered = this.next();
    this.child.stdin!.write(`${url} ${TOKENS.bot} ${target.homeserver} ${target.token} ${name}\n`);
    await answered;
  }

  /** Ends its input, so it removes its folder and exits; SIGTERM if it has not within 5 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((done) => this.child.once('exit', () => done()));
    this.child.stdin!.end();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000).unref())]);
    await stopChild(this.child);
  }
}
