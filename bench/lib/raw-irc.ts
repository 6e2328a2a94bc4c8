import { connect, type Socket } from 'node:net';

/**
 * The smallest IRC client a bench needs, on a raw socket: registers, joins, answers PING, and hands
 * every line to `onLine` with the time its chunk arrived (one stamp per read, taken before any parsing,
 * so what is measured is the wire and not this client). Nagle is off: a bench line goes out at once.
 */
export class RawIrc {
  private buffer = '';
  private readonly waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  onLine: (line: string, at: number) => void = () => undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk, performance.now()));
    socket.on('error', () => undefined);
  }

  /** Connects, registers as `nick` and joins `channel`; resolves once the server confirmed the join. */
  static async connect(port: number, nick: string, channel: string): Promise<RawIrc> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((ready, fail) => {
      socket.once('connect', ready);
      socket.once('error', fail);
    });
    const irc = new RawIrc(socket);
    const welcome = irc.waitFor(new RegExp(`^:\\S+ 001 ${nick} `));
    irc.send(`NICK ${nick}\r\nUSER ${nick} 0 * :groupwire bench`);
    await welcome;
    const joined = irc.waitFor(new RegExp(`^:${nick}!\\S+ JOIN :?${channel}$`, 'i'));
    irc.send(`JOIN ${channel}`);
    await joined;
    return irc;
  }

  send(raw: string): void {
    this.socket.write(`${raw}\r\n`);
  }

  /** The next line matching `pattern` (fails after `timeoutMs`). */
  waitFor(pattern: RegExp, timeoutMs = 15_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no IRC line like ${pattern} within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({ pattern, resolve: (line) => { clearTimeout(timer); resolve(line); } });
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: string, at: number): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n')) !== -1) {
      const line = this.buffer.slice(0, end).replace(/\r$/, '');
      this.buffer = this.buffer.slice(end + 1);
      if (line.startsWith('PING ')) this.send(`PONG ${line.slice(5)}`);
      for (let i = this.waiters.length - 1; i >= 0; i -= 1) {
        if (this.waiters[i]!.pattern.test(line)) this.waiters.splice(i, 1)[0]!.resolve(line);
      }
      this.onLine(line, at);
    }
  }
}
