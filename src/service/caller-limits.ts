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
  const wait = core.limiter.take(callerKey(core, request.headers, request.ip));
  if (wait > 0) throw rateLimited(wait);
}

/** The headers a caller is known by. */
export interface CallerHeaders {
  authorization?: string;
  cookie?: string;
}

/**
 * The key the per-caller limits count a caller under (REST calls and chat socket upgrades alike).
 * The caller is whoever the credentials say; without any, the address (login comes from there).
 */
export function callerKey(core: ServiceCore, headers: CallerHeaders, address: string): string {
  void core;
  return headers.authorization ?? headers.cookie ?? address;
}
