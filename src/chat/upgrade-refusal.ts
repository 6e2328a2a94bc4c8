import {
  AuthenticationError, BadCsrfError, BadRequestError, ExpiredError, InadequatePermissionsError, RateLimitError,
} from '../api/errors.js';
import type { CloseAction } from './close-codes.js';

/** What a refused upgrade asks for. */
export function refusalAction(error: unknown): CloseAction {
  if (error instanceof BadRequestError && error.extra === 'invalid chatsub_id') return { kind: 'rejoin', why: error.extra };
  if (error instanceof BadRequestError && error.extra === 'closed chat') return { kind: 'closed', why: error.extra };
  if (error instanceof ExpiredError || error instanceof AuthenticationError || error instanceof BadCsrfError) {
    return { kind: 'login', why: error.type };
  }
  if (error instanceof RateLimitError) return { kind: 'wait', why: error.type };
  if (error instanceof InadequatePermissionsError) return { kind: 'forbidden', why: error.extra };
  return { kind: 'backoff', why: (error as Error)?.message ?? String(error) };
}
