/**
 * The error types of spec part 7, and `group_not_found`, which the real service answers (field notes)
 * and our extension operations use for a group that does not exist (docs/protocol.md "Extensions").
 */
export type ErrorType =
  | 'unauthorized_error'
  | 'bad_request'
  | 'authentication'
  | 'expired'
  | 'rate_limit'
  | 'inadequate_permissions'
  | 'invalid_value'
  | 'server'
  | 'bad_csrf'
  | 'group_not_found';

/**
 * An error answered as the spec's error object. The spec reports errors with HTTP 400 and too many
 * requests with HTTP 429; fault injection may choose another status to imitate a failing proxy.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(
    readonly type: ErrorType,
    readonly extra = '',
    options: { status?: number; headers?: Record<string, string> } = {},
  ) {
    super(`${type}${extra ? `: ${extra}` : ''}`);
    this.status = options.status ?? (type === 'rate_limit' ? 429 : 400);
    this.headers = options.headers ?? {};
  }

  toBody(): { object: 'error'; type: ErrorType; extra: string } {
    return { object: 'error', type: this.type, extra: this.extra };
  }
}

export const badRequest = (extra: string): ApiError => new ApiError('bad_request', extra);
export const invalidValue = (field: string): ApiError => new ApiError('invalid_value', field);
export const noPermission = (flag: string): ApiError => new ApiError('inadequate_permissions', flag);

export function rateLimited(retryAfterSeconds: number, extra = 'too many requests'): ApiError {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  return new ApiError('rate_limit', extra, { headers: { 'retry-after': String(seconds) } });
}
