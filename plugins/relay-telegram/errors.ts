import { GrammyError, HttpError } from 'grammy';

/**
 * What to log of a failed Bot API call, never the token: the Bot API's URLs carry it
 * (`/bot<token>/method`), and the network error grammY wraps (node-fetch's) names the URL, so only
 * its code is kept. Anything else has the token cut out of its message.
 */
export function telegramFailure(error: unknown, token: string): { reason: string } {
  if (error instanceof GrammyError) return { reason: `${error.method}: ${error.error_code} ${error.description}` };
  if (error instanceof HttpError) {
    const code = (error.error as { code?: unknown } | null)?.code;
    return { reason: `${error.message}${typeof code === 'string' ? ` (${code})` : ''}` };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { reason: message.split(token).join('<token>') };
}

/** Telegram's 429: wait `retry_after` seconds (1 s when it names none). */
export function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof GrammyError) || error.error_code !== 429) return undefined;
  return Math.max(1, error.parameters.retry_after ?? 1) * 1000;
}

/** The token refused: 401 Unauthorized (a revoked or wrong token), 404 for one Telegram cannot even parse. */
export function isRefusal(error: unknown): error is GrammyError {
  return error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404);
}

/** A Bot API answer that trying again cannot change (a 4xx but 429). */
export function isFinal(error: unknown): error is GrammyError {
  return error instanceof GrammyError && error.error_code >= 400 && error.error_code < 500 && error.error_code !== 429;
}
