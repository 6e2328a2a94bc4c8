import { Api } from 'grammy';

/** The AbortSignal type grammY's methods declare: its Node build types it as the abort-controller polyfill's, which Node's own signal fits at run time. */
export type GrammySignal = Parameters<Api['getMe']>[0];

/** Node's AbortSignal for a grammY call (grammY checks only that it has addEventListener). */
export const grammySignal = (signal: AbortSignal): GrammySignal => signal as unknown as GrammySignal;

/**
 * grammY's Bot API client for one use: `apiRoot` without a trailing slash (grammY refuses one), and a
 * timeout per call in whole seconds (the long poll's client gets the poll's time on top).
 */
export function botApi(token: string, apiUrl: string, timeoutMs: number, extraS = 0): Api {
  return new Api(token, { apiRoot: apiUrl.replace(/\/+$/, ''), timeoutSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)) + extraS });
}
