/**
 * The part of irc-framework 4 (CommonJS, no bundled types) the relay uses. Only what is called here is
 * declared; see node_modules/irc-framework/src/client.js for the rest.
 */
declare module 'irc-framework' {
  /** A parsed IRC line. `command` is the verb or the three-digit numeric as sent. */
  export interface IrcMessage {
    tags: Record<string, string | boolean>;
    prefix: string;
    nick: string;
    ident: string;
    hostname: string;
    command: string;
    params: string[];
  }

  /** What irc-framework hands a transport: the client options. */
  export interface TransportOptions {
    host: string;
    port: number;
    tls?: boolean;
    ping_interval: number;
    ping_timeout: number;
    [key: string]: unknown;
  }

  /** The interface irc-framework's Connection drives (see src/transports/net.js). */
  export interface Transport {
    on(event: string, listener: (...args: any[]) => void): unknown;
    removeAllListeners(): unknown;
    connect(): void;
    writeLine(line: string, callback?: () => void): void;
    isConnected(): boolean;
    close(force?: boolean): void;
    disposeSocket(): void;
    setEncoding(encoding: string): boolean;
  }

  export type TransportClass = new (options: TransportOptions) => Transport;

  export interface ClientOptions {
    host: string;
    port: number;
    tls?: boolean;
    nick: string;
    username?: string;
    gecos?: string;
    password?: string;
    account?: { account?: string; password?: string };
    sasl_mechanism?: string;
    sasl_disconnect_on_fail?: boolean;
    enable_echomessage?: boolean;
    auto_reconnect?: boolean;
    version?: string;
    ping_interval?: number;
    ping_timeout?: number;
    encoding?: string;
    transport?: TransportClass;
    [key: string]: unknown;
  }

  export interface Connection {
    on(event: 'message', listener: (message: IrcMessage, line: string) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
    connected: boolean;
    transport: Transport | null;
    end(data?: string, hadError?: boolean): void;
  }

  export interface NetworkInfo {
    options: Record<string, unknown>;
    cap: { enabled: string[]; available: Map<string, string>; isEnabled(cap: string): boolean };
    supports(name: string): unknown;
  }

  export class Client {
    constructor(options?: ClientOptions);
    readonly connection: Connection;
    readonly network: NetworkInfo;
    readonly user: { nick: string };
    readonly connected: boolean;
    connect(options?: ClientOptions): void;
    requestCap(cap: string | string[]): void;
    raw(...args: Array<string | number>): void;
    quit(message?: string): void;
    join(channel: string, key?: string): void;
    changeNick(nick: string): void;
    on(event: string, listener: (event: any) => void): this;
    removeAllListeners(event?: string): this;
  }
}
