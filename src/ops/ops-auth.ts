import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * Who may read the operations endpoint. With a token, every request carries it (`Authorization:
 * Bearer`, or `?token=` for a browser opening the status page). Without one (loopback only), a request
 * must name a loopback host: a web page elsewhere cannot reach the endpoint by DNS rebinding, and a
 * cross-site POST (a reload) is refused by its Origin.
 */
export class OpsAuth {
  private readonly token: Buffer | undefined;

  constructor(token: string | undefined) {
    this.token = token === undefined ? undefined : Buffer.from(token);
  }

  /** undefined when allowed; else the HTTP status and why. */
  refuse(request: IncomingMessage, url: URL): { status: number; why: string } | undefined {
    if (this.token) {
      const header = request.headers.authorization;
      const given = header?.startsWith('Bearer ') ? header.slice(7).trim() : url.searchParams.get('token') ?? '';
      if (!this.matches(given)) return { status: 401, why: 'a token is needed: Authorization: Bearer <ops.token>, or ?token=' };
    } else if (!isLoopbackHost(request.headers.host ?? '')) {
      return { status: 403, why: 'this endpoint answers loopback host names only (set ops.token to serve other hosts)' };
    }
    if (request.method === 'POST') {
      const origin = request.headers.origin;
      if (origin !== undefined && origin !== `http://${request.headers.host}`) return { status: 403, why: 'a request from another site is refused' };
    }
    return undefined;
  }

  private matches(given: string): boolean {
    const candidate = Buffer.from(given);
    return candidate.length === this.token!.length && timingSafeEqual(candidate, this.token!);
  }
}

function isLoopbackHost(hostHeader: string): boolean {
  const host = hostHeader.replace(/:\d+$/, '').replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
