import type { FastifyRequest } from 'fastify';
import type { ServiceCore } from './core.js';
import { rateLimited } from './errors.js';

/**
 * What every API call meets before anything else: injected faults (admin `faults`), then the
 * per-caller rate limit.
 */
export async function applyFaultsAndLimits(core: ServiceCore, request: FastifyRequest, operation: string): Promise<void> {
  const delay = core.faults.delay();
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
  const injected = core.faults.errorFor('api', operation);
  if (injected) throw injected;
  // The caller is whoever the credentials say; without any, the address (login comes from there).
  const key = request.headers.authorization ?? request.headers.cookie ?? request.ip;
  const wait = core.limiter.take(key);
  if (wait > 0) throw rateLimited(wait);
}
