import { createServer } from 'node:net';

/**
 * A loopback port nothing listens on: taken from the system and let go again. For a server a test
 * starts there, or for an address that refuses connections.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const { port } = server.address() as { port: number };
  await new Promise((closed) => server.close(closed));
  return port;
}
