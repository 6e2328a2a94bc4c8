/**
 * The part of @xmpp/client 0.14 (ESM, no bundled types) the relay uses. Only what is called here is
 * declared; see node_modules/@xmpp/client/index.js and node_modules/@xmpp/connection/index.js.
 */
declare module '@xmpp/client' {
  import type { EventEmitter } from 'node:events';

  /** An ltx element (node_modules/ltx/lib/Element.js). */
  export interface Element {
    name: string;
    attrs: Record<string, string | undefined>;
    children: Array<Element | string>;
    is(name: string, xmlns?: string): boolean;
    getChild(name: string, xmlns?: string): Element | undefined;
    getChildren(name: string, xmlns?: string): Element[];
    getChildText(name: string, xmlns?: string): string | null;
    text(): string;
    append(...children: Array<Element | string>): Element;
    toString(): string;
  }

  export function xml(name: string, attrs?: Record<string, string | number | undefined> | null, ...children: Array<Element | string | undefined>): Element;

  export interface Jid {
    local: string;
    domain: string;
    resource: string;
    bare(): Jid;
    toString(): string;
  }
  export function jid(address: string): Jid;

  export interface ClientOptions {
    service: string;
    domain: string;
    username: string;
    password: string;
    resource?: string;
    /** How long a stream step (open, close) may take, ms. */
    timeout?: number;
  }

  /** The socket object a transport hands the connection: an EventEmitter of connect, data, close, error. */
  export interface XmppSocket extends EventEmitter {
    secure?: boolean;
  }

  export interface Client extends EventEmitter {
    status: string;
    jid: Jid | null;
    socket: XmppSocket | null;
    options: ClientOptions;
    start(): Promise<Jid>;
    stop(): Promise<unknown>;
    send(element: Element): Promise<void>;
    sendReceive(element: Element, timeout?: number): Promise<Element>;
    isSecure(): boolean;
    /** The TLS/TCP options of the service (overridable per client). */
    socketParameters(service: string): Record<string, unknown> | undefined;
    /** Internal (used by @xmpp/starttls): switches the stream to another socket. */
    _attachSocket(socket: XmppSocket): void;
    restart(): Promise<unknown>;
    reconnect: EventEmitter & { delay: number; start(): void; stop(): void };
    iqCaller: { request(stanza: Element, timeout?: number): Promise<Element> };
    streamManagement: EventEmitter & { enabled: boolean; id: string };
  }

  export function client(options: ClientOptions): Client;
}
