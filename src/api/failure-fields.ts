import { GroupsError } from './errors.js';

/** An error class (GroupsError, TransportError, ...): failureFields logs an error of one of them as a plain reason. */
export type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * The fields to log a failure with. An expected failure (the service answered an error, the network
 * failed, or one of `expected`) becomes `{ reason }`, one readable string with the causes under it
 * ("login: connect ECONNREFUSED 127.0.0.1:8443"): a stack trace says nothing more about a service
 * that is down and buries the line in a log read by people. Anything else is a bug or a surprise and
 * keeps its stack: `{ err }`.
 */
export function failureFields(error: unknown, ...expected: ErrorClass[]): { reason: string } | { err: unknown } {
  if (isExpected(error, expected)) return { reason: reasonOf(error) };
  return { err: error };
}

function isExpected(error: unknown, expected: ErrorClass[]): boolean {
  if (error instanceof GroupsError) return true;
  if (expected.some((kind) => error instanceof kind)) return true;
  // A Node system error (ECONNREFUSED, ENOTFOUND, ETIMEDOUT, a TLS failure) is the network's doing.
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && /^(E[A-Z]+|UND_ERR_\w+|ERR_TLS_\w+|ERR_SSL_\w+|\w*CERT\w*|UNABLE_TO_\w+)$/.test(code);
}

/**
 * An error's message followed by those of its causes (`cause`, and `original` as some SDKs name it)
 * that it does not already say, with their codes: "request_error: connect ECONNREFUSED 127.0.0.1:9".
 */
export function reasonOf(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth += 1) {
    const message = current instanceof Error ? current.message : String(current);
    const code = (current as { code?: unknown }).code;
    const text = typeof code === 'string' && code && !message.includes(code) ? `${message} (${code})` : message;
    if (text && !parts.some((part) => part.includes(message))) parts.push(text);
    if (typeof current !== 'object') break;
    const next = (current as { cause?: unknown; original?: unknown });
    current = next.cause ?? next.original;
  }
  return parts.join(': ') || 'unknown failure';
}
