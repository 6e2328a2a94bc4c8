import type { Server } from 'node:http';

/** `host:port` (an IPv6 host in brackets) as the host and port to listen on. */
export function splitListen(listen: string): { host: string; port: number } {
  const colon = listen.lastIndexOf(':');
  return { host: listen.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(listen.slice(colon + 1)) };
}

/**
 * Listens on `listen` (`host:port`, port 0 for a free one) and gives the address bound
 * (`http://host:port`, the host in brackets when IPv6); rejects with the socket error (EADDRINUSE,
 * EACCES) for the caller to say and retry. Shared by the ops endpoint and the media listener.
 */
export async function listenHttp(server: Server, listen: string): Promise<string> {
  const { host, port } = splitListen(listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  const boundPort = typeof bound === 'object' && bound ? bound.port : port;
  return `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;
}

/** Stops listening and ends every open connection (keep-alive ones too), resolving once closed; none is fine. */
export async function closeHttp(server: Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
