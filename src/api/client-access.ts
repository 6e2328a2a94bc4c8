import type { Transport } from './transport.js';

/**
 * What the client's helpers that speak past the JSON calls (the archive download, the chat socket)
 * need of a GroupsClient: its transport, its credentials and its retry loop. An interface of its own,
 * so those helpers do not import the client that imports them.
 */
export interface ClientAccess {
  readonly transport: Transport;
  readonly baseUrl: string;
  authHeaders(): Record<string, string>;
  csrf(): Promise<string>;
  run<T>(operation: string, method: 'GET' | 'POST', attempt: () => Promise<T>, options?: { retry?: boolean }): Promise<T>;
}
