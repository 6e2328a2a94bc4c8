import { EventEmitter } from 'node:events';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, TLSSocket } from 'node:tls';
import type { Transport, TransportClass, TransportOptions } from 'irc-framework';
import { guardCommandLine } from './irc-text.js';

export interface TransportSettings {
  tls: boolean;
  /** Check the server's certificate against the system's CAs or `ca`. */
  verify: boolean;
  ca?: string;
  /** Told when a line had CR, LF or NUL in it (they were made spaces): a bug upstream, never an injection. */
  onUnsafeLine(line: string): void;
  /** Each line read, before irc-framework reads it (`read`: hand it to irc-framework; IrcLink's plain channel lines). */
  readLine?(line: string, read: () => void): void;
}

/**
 * The socket under irc-framework (its Connection drives this like its own net transport), for two
 * things the stock one lacks: a CA of our choosing for TLS, and a last guard on every line written, so
 * that nothing — ours or irc-framework's — can put CR, LF or NUL into a command and start another.
 * Lines read are decoded as UTF-8, or as Latin-1 when they are not valid UTF-8 (older IRC clients).
 */
export function relayTransport(settings: TransportSettings): TransportClass {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const latin1 = new TextDecoder('latin1');

  return class RelayTransport extends EventEmitter implements Transport {
    private socket: Socket | undefined;
    private connected = false;
    private buffer: Buffer = Buffer.alloc(0);
    private lastError: Error | undefined;

    constructor(private readonly options: TransportOptions) {
      super();
    }

    connect(): void {
      this.disposeSocket();
      this.buffer = Buffer.alloc(0);
      this.lastError = undefined;
      const { host, port } = this.options;
      const socket = settings.tls
        ? tlsConnect({ host, port, servername: isIP(host) ? undefined : host, rejectUnauthorized: settings.verify, ca: settings.ca })
        : netConnect({ host, port });
      this.socket = socket;
      // Without this, Nagle holds a line back while an earlier one is unacknowledged, and the server
      // acknowledges late (delayed ACK, up to 40 ms on Linux): 10-40 ms on every relayed line.
      socket.setNoDelay(true);
      const idle = (this.options.ping_interval + this.options.ping_timeout) * 1000;
      if (idle > 0) socket.setTimeout(idle);
      socket.on(socket instanceof TLSSocket ? 'secureConnect' : 'connect', () => {
        this.connected = true;
        this.emit('extra', 'raw socket connected', socket);
        this.emit('open');
      });
      socket.on('data', (data: Buffer) => this.onData(data));
      socket.on('error', (error) => {
        this.lastError = error;
      });
      socket.on('timeout', () => this.close(true));
      socket.on('close', () => {
        this.connected = false;
        this.emit('close', this.lastError ?? false);
      });
    }

    isConnected(): boolean {
      return this.connected;
    }

    writeLine(line: string, callback?: () => void): void {
      if (!this.socket || !this.connected) {
        if (callback) process.nextTick(callback);
        return;
      }
      const guarded = guardCommandLine(line);
      if (guarded.changed) settings.onUnsafeLine(line);
      this.socket.write(`${guarded.line}\r\n`, callback ? () => callback() : undefined);
    }

    close(force?: boolean): void {
      if (!this.socket) return;
      if (force || !this.connected) this.socket.destroy();
      else this.socket.end();
    }

    disposeSocket(): void {
      if (!this.socket) return;
      this.socket.removeAllListeners();
      this.socket.on('error', () => undefined);
      this.socket.destroy();
      this.socket = undefined;
      this.connected = false;
    }

    setEncoding(encoding: string): boolean {
      return /^utf-?8$/i.test(encoding);
    }

    private onData(data: Buffer): void {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, data]) : data;
      let start = 0;
      for (let end = this.buffer.indexOf(0x0a, start); end !== -1; end = this.buffer.indexOf(0x0a, start)) {
        const raw = this.buffer.subarray(start, end);
        start = end + 1;
        let line: string;
        try {
          line = utf8.decode(raw);
        } catch {
          line = latin1.decode(raw);
        }
        if (settings.readLine) settings.readLine(line, () => this.emit('line', line));
        else this.emit('line', line);
      }
      this.buffer = this.buffer.subarray(start);
      // A peer that never ends its line must not make us buffer without bound.
      if (this.buffer.length > 64 * 1024) this.close(true);
    }
  };
}
