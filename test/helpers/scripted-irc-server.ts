import { createServer, type Server, type Socket } from 'node:net';

/** What a scripted server offers at registration. */
export interface ScriptedIrcOffer {
  /** The capabilities of `CAP LS` ('' for none). */
  caps: string;
  /** ISUPPORT tokens after `CHANTYPES=#`, e.g. `CHATHISTORY=4`. */
  isupport?: string;
  /** Whether JOIN is echoed with a `server-time` tag. */
  serverTime?: boolean;
}

/** Writes one line to the connection the command came on. */
export type Send = (line: string) => void;

/**
 * A tiny IRC server for what no server in Debian does (draft/chathistory, a PONG that comes late): just
 * enough IRC for relay-irc (CAP, registration waiting for CAP END, ISUPPORT, JOIN, PING, QUIT). A test
 * scripts the rest in `command()`, which sees every command first and answers true when it handled it.
 */
export abstract class ScriptedIrcServer {
  port = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly offer: ScriptedIrcOffer) {
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

  /** The test's script: true when it answered `command` itself (the defaults below are then skipped). */
  protected abstract command(command: string, params: string[], line: string, send: Send): boolean;

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    let nick = '*';
    let buffer = '';
    let capping = false;
    let user = false;
    const send: Send = (line) => {
      if (socket.writable) socket.write(`${line}\r\n`);
    };
    // Registration waits for CAP END, as servers do.
    const welcome = () => {
      send(`:irc.test 001 ${nick} :Welcome`);
      send(`:irc.test 005 ${nick} CHANTYPES=#${this.offer.isupport ? ` ${this.offer.isupport}` : ''} :are supported`);
      send(`:irc.test 422 ${nick} :No MOTD`);
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\n'); end !== -1; end = buffer.indexOf('\n')) {
        const line = buffer.slice(0, end).replace(/\r$/, '');
        buffer = buffer.slice(end + 1);
        const [command = '', ...params] = line.split(' ');
        if (command === 'NICK') nick = params[0]!;
        if (this.command(command, params, line, send)) continue;
        if (command === 'CAP' && params[0] === 'LS') {
          capping = true;
          send(`:irc.test CAP * LS :${this.offer.caps}`);
        } else if (command === 'CAP' && params[0] === 'REQ') send(`:irc.test CAP * ACK ${params.slice(1).join(' ')}`);
        else if (command === 'CAP' && params[0] === 'END') {
          capping = false;
          if (user) welcome();
        } else if (command === 'USER') {
          user = true;
          if (!capping) welcome();
        } else if (command === 'PING') send(`:irc.test PONG irc.test ${params.join(' ')}`);
        else if (command === 'JOIN') {
          const time = this.offer.serverTime ? `@time=${new Date().toISOString()} ` : '';
          send(`${time}:${nick}!gw@127.0.0.1 JOIN ${params[0]}`);
          send(`:irc.test 366 ${nick} ${params[0]} :End of /NAMES list.`);
        } else if (command === 'QUIT') socket.end();
      }
    });
  }
}
