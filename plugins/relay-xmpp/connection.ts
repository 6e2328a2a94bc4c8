import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import { client as xmppClient, xml, type Client, type Element, type XmppSocket } from '@xmpp/client';
import type { Logger } from 'pino';
import { failureFields } from '../../src/index.js';

const NS_STREAM = 'http://etherx.jabber.org/streams';
const NS_TLS = 'urn:ietf:params:xml:ns:xmpp-tls';
const NS_SASL = 'urn:ietf:params:xml:ns:xmpp-sasl';
const NS_SASL2 = 'urn:xmpp:sasl:2';

export interface ConnectionSettings {
  service: string;
  domain: string;
  username: string;
  password: string;
  /** PEM of the CA to trust instead of the system's (tls.ca_file). */
  ca?: string;
  allowSelfSigned: boolean;
  log: Logger;
}

export interface ConnectionEvents {
  /** A new session: rooms must be joined again (nothing of the old one survives). */
  online(): void;
  /** XEP-0198 resumed the session: the server kept the room presences and queued what came meanwhile. */
  resumed(): void;
  /** The stream is down; @xmpp/reconnect tries again every second. */
  offline(reason: string): void;
  stanza(stanza: Element): void;
  /** The credentials or the server's TLS were refused: trying again changes nothing. */
  fatal(error: Error): void;
}

/** Loopback: the one place a stream without TLS is allowed (a test server, a server on the same host). */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}

/**
 * The XMPP client stream, on @xmpp/client 0.14: SASL (SCRAM-SHA-1 first), resource binding, stream
 * management with resumption (XEP-0198, on by default in the library: the session survives a short
 * drop and stanzas not acknowledged are sent again), and reconnecting every second after a drop.
 *
 * TLS is verified against the system's CAs or `ca_file`, with the XMPP domain as the server name. The
 * library's STARTTLS takes no TLS options, so the relay does STARTTLS itself: it sees the stream
 * features before the library does, and when they offer STARTTLS it hides them, upgrades the socket
 * with its own options and restarts the stream. Features without STARTTLS on an unencrypted stream
 * are refused (credentials never go out in the clear) unless the server is on loopback.
 */
const REFUSALS_FATAL = 3;

export class XmppConnection {
  readonly client: Client;
  private stopped = false;
  private readonly host: string;
  /** Connection errors since the last session began: the first is a warning, the rest (one a second while the server is away) debug. */
  private errors = 0;
  /** Refusals of the credentials in a row: fatal at the third (one alone has been seen from a healthy Prosody). */
  private refusals = 0;
  private loginTimer: NodeJS.Timeout | undefined;
  /** This connection's login was refused already. */
  private refusedHere = false;

  constructor(private readonly settings: ConnectionSettings, private readonly events: ConnectionEvents) {
    this.host = new URL(settings.service).hostname;
    this.client = xmppClient({ service: settings.service, domain: settings.domain, username: settings.username, password: settings.password, timeout: 10_000 });
    const client = this.client;
    const plainParameters = client.socketParameters.bind(client);
    client.socketParameters = (service) => {
      const parameters = plainParameters(service);
      return parameters && service.startsWith('xmpps:') ? { ...parameters, ...this.tlsOptions() } : parameters;
    };
    client.prependListener('element', (element: Element) => this.features(element));
    client.on('connecting', () => {
      this.refusedHere = false;
    });
    client.on('online', () => {
      this.errors = 0;
      this.refusals = 0;
      events.online();
    });
    client.streamManagement.on('resumed', () => events.resumed());
    client.on('disconnect', (detail?: { reason?: unknown }) => {
      if (!this.stopped) events.offline(detail?.reason instanceof Error ? detail.reason.message : 'connection closed');
    });
    client.on('stanza', (stanza: Element) => events.stanza(stanza));
    client.on('error', (error: Error) => {
      if (this.stopped) return;
      if (error.name === 'SASLError') {
        const refusal = `the server refused the credentials (${(error as Error & { condition?: string }).condition ?? error.message})`;
        // A wrong password is refused every time; Prosody 0.12 was seen refusing a right one once, the
        // first login of a bot restarted after a kill, and taking it a second later. So a refusal is
        // fatal only when it comes three times in a row (reconnecting a second apart).
        // The library reports one refusal twice: count it once per connection.
        if (this.refusedHere) return;
        this.refusedHere = true;
        this.refusals += 1;
        if (this.refusals >= REFUSALS_FATAL) events.fatal(new Error(refusal));
        else {
          settings.log.warn({ refusals: this.refusals, status: this.client.status }, `${refusal}; trying again`);
          this.loginAgain();
        }
        return;
      }
      const log = this.errors++ === 0 ? settings.log.warn.bind(settings.log) : settings.log.debug.bind(settings.log);
      log({ ...failureFields(error), errors: this.errors }, 'XMPP connection error; reconnecting every second');
    });
  }

  /**
   * A second from now, logs in again on a fresh connection unless something else did: after a refused
   * login the library closes the stream but does not always reconnect (@xmpp/reconnect only takes up a
   * connection that ended as `disconnect`).
   */
  private loginAgain(): void {
    clearTimeout(this.loginTimer);
    this.loginTimer = setTimeout(() => {
      if (this.stopped || this.online) return;
      void this.client.stop().catch(() => undefined).then(() => {
        if (!this.stopped && !this.online) this.start();
      });
    }, 1_000);
    this.loginTimer.unref();
  }

  start(): void {
    // A first connection that fails is tried again by @xmpp/reconnect, like a dropped one.
    this.client.start().catch((error: unknown) => {
      if (!this.stopped) this.settings.log.warn({ ...failureFields(error) }, 'could not connect to the XMPP server yet; trying again');
    });
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.loginTimer);
    this.client.reconnect.stop();
    await this.client.stop().catch(() => undefined);
  }

  get online(): boolean {
    return this.client.status === 'online';
  }

  send(stanza: Element): Promise<void> {
    return this.client.send(stanza);
  }

  request(iq: Element, timeoutMs = 20_000): Promise<Element> {
    return this.client.iqCaller.request(iq, timeoutMs);
  }

  private tlsOptions(): Record<string, unknown> {
    return {
      servername: this.settings.domain,
      ...(this.settings.ca ? { ca: this.settings.ca } : {}),
      rejectUnauthorized: !this.settings.allowSelfSigned,
    };
  }

  /** Stream features, before the library's handlers: STARTTLS with the relay's TLS options, or no credentials in the clear. */
  private features(element: Element): void {
    if (!element.is('features', NS_STREAM) || this.client.isSecure()) return;
    if (element.getChild('starttls', NS_TLS)) {
      element.children = [];
      void this.startTls().catch((error: unknown) => {
        const reason = error instanceof Error ? error.message : String(error);
        this.events.fatal(new Error(`TLS with ${this.settings.domain} failed: ${reason}`));
      });
      return;
    }
    const asksCredentials = element.getChild('mechanisms', NS_SASL) ?? element.getChild('authentication', NS_SASL2);
    if (asksCredentials && !isLoopback(this.host)) {
      element.children = [];
      this.events.fatal(new Error('the server offers no TLS (STARTTLS): the password is not sent in the clear; use xmpps:// or enable TLS on the server'));
    }
  }

  private async startTls(): Promise<void> {
    const answer = await this.client.sendReceive(xml('starttls', { xmlns: NS_TLS }));
    if (!answer.is('proceed', NS_TLS)) throw new Error('the server refused STARTTLS');
    const secure = await new Promise<TLSSocket>((done, fail) => {
      const socket = tlsConnect({ socket: this.client.socket as unknown as Socket, ...this.tlsOptions() });
      socket.once('secureConnect', () => {
        socket.off('error', fail);
        done(socket);
      });
      socket.once('error', fail);
    });
    // What @xmpp/connection reads to know the stream is encrypted (and so may use SASL PLAIN, send `from`).
    (secure as unknown as XmppSocket).secure = true;
    this.client._attachSocket(secure as unknown as XmppSocket);
    await this.client.restart();
  }
}
