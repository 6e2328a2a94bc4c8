import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the receiver does with one POST: answer with a status, never answer (the sender's timeout), or
 * 'stall-body': send the headers of a 200 and the start of a body, and never finish it.
 */
export type Behaviour = number | 'hang' | 'stall-body';

/** One POST as the receiver saw it. */
export interface Received {
  idempotencyKey: string | undefined;
  body: string;
  line: Record<string, unknown>;
  /** X-Groupwire-Signature matched the HMAC of `<X-Groupwire-Timestamp>.<body>` with the secret. */
  signed: boolean;
  answered: Behaviour;
}

/**
 * A webhook receiver on a real node:http server (127.0.0.1, a free port), the way a tool taking
 * groupwire's webhooks would be written: it checks the signature, answers as scripted (the first POSTs
 * get the script's answers in turn, the rest `then`), and keeps, by Idempotency-Key, the lines it
 * accepted (answered 2xx): a line delivered twice would show a count of 2.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  /** Idempotency-Key → how many times a POST with it was answered 2xx. */
  readonly accepted = new Map<string, number>();
  /** The accepted lines, in the order they were first accepted. */
  readonly lines: Array<Record<string, unknown>> = [];
  private readonly hanging = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    private readonly secret: string,
    private script: Behaviour[],
    private then: Behaviour,
  ) {}

  static async start(secret: string, script: Behaviour[] = [], then: Behaviour = 200): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | undefined;
    const server = createServer((request, response) => receiver!.handle(request, response));
    receiver = new WebhookReceiver(server, secret, [...script], then);
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** From now on, answer every POST this way. */
  answer(behaviour: Behaviour): void {
    this.script = [];
    this.then = behaviour;
  }

  /** The next POSTs get these answers, in turn (after any still scripted); then as before. */
  failNext(...behaviours: Behaviour[]): void {
    this.script.push(...behaviours);
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const behaviour = this.script.shift() ?? this.then;
      const key = request.headers['idempotency-key'] as string | undefined;
      const timestamp = String(request.headers['x-groupwire-timestamp'] ?? '');
      const expected = `sha256=${createHmac('sha256', this.secret).update(`${timestamp}.${body}`).digest('hex')}`;
      const given = String(request.headers['x-groupwire-signature'] ?? '');
      const signed = given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
      const line = JSON.parse(body) as Record<string, unknown>;
      this.received.push({ idempotencyKey: key, body, line, signed, answered: behaviour });
      if (behaviour === 'hang' || behaviour === 'stall-body') {
        if (behaviour === 'stall-body') response.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' }).write('{"ok":');
        this.hanging.add(response);
        response.on('close', () => this.hanging.delete(response));
        return;
      }
      if (behaviour >= 200 && behaviour < 300 && key !== undefined) {
        const count = (this.accepted.get(key) ?? 0) + 1;
        this.accepted.set(key, count);
        if (count === 1) this.lines.push(line);
      }
      response.writeHead(behaviour, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: behaviour < 300 }));
    });
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    await new Promise((closed) => this.server.close(closed));
  }
}
