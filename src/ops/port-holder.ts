import { request } from 'node:http';

/** How long to wait for whatever holds the port to answer. */
const ASK_TIMEOUT_MS = 2_000;
/** The most of its answer read: a status snapshot is tens of KB; anything bigger is not worth holding. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * Who holds an operations endpoint's port (EADDRINUSE), in words for the log, ops.json and `groupwire
 * status`: another groupwire run is named by its pid (read from its /status.json, with this process's
 * own token when it has one, as a second copy of one bots.yaml does); anything else by the address.
 */
export async function describePortHolder(host: string, port: number, token: string | undefined): Promise<string> {
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const answer = await ask(host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host, port, token);
  if (!answer) return `something that does not answer HTTP on ${address} (another program; \`ss -ltnp\` names it)`;
  if (answer.status === 401) return `another groupwire run (its endpoint at http://${address} wants its own ops.token, so its pid is not known here)`;
  try {
    const snapshot = JSON.parse(answer.body) as { pid?: unknown; version?: unknown; bots?: unknown };
    if (typeof snapshot.pid === 'number' && Array.isArray(snapshot.bots)) {
      return `groupwire run pid ${snapshot.pid} (its status: http://${address}/status)`;
    }
  } catch {
    // Not a groupwire status: said below.
  }
  return `another program answering HTTP on ${address} (HTTP ${answer.status} to /status.json; \`ss -ltnp\` names it)`;
}

function ask(host: string, port: number, token: string | undefined): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { host: `${host.includes(':') ? `[${host}]` : host}:${port}` };
    if (token) headers.authorization = `Bearer ${token}`;
    const outgoing = request({ host, port, path: '/status.json', headers, timeout: ASK_TIMEOUT_MS }, (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) response.destroy();
        else chunks.push(chunk);
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('close', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', () => resolve({ status: response.statusCode ?? 0, body: '' }));
    });
    outgoing.on('timeout', () => outgoing.destroy());
    outgoing.on('error', () => resolve(undefined));
    outgoing.end();
  });
}
