/**
 * One error class per error type of spec part 7, all under GroupsError. Each carries the type, the
 * extra text, the HTTP status and the operation; InvalidValueError also names the field.
 */
export interface ErrorDetails {
  type: string;
  extra: string;
  status: number;
  operation: string;
  /** Seconds from a Retry-After header, when the answer had one. */
  retryAfterSeconds?: number;
}

/** What a caller knows about a refused call, for explaining it (explainError). */
export interface CallContext {
  /** The call's parameters. */
  params?: Readonly<Record<string, unknown>>;
}

/**
 * Every error a call to the service can end in: the service's own refusals (the error object of spec
 * part 7) and the client's (no answer, an answer that was not the spec's JSON). Catch this to handle
 * any of them; catch a subclass to handle one kind, and read `type` and `extra` for the details.
 */
export class GroupsError extends Error {
  readonly type: string;
  readonly extra: string;
  readonly status: number;
  readonly operation: string;
  readonly retryAfterSeconds: number | undefined;
  /**
   * What the caller knew about the refused call, attached with withContext(): explainError() uses it
   * to name what was not found (`group "demo" was not found`).
   */
  context: CallContext | undefined;

  constructor(details: ErrorDetails, message?: string) {
    super(message ?? `${details.operation}: ${details.type}${details.extra ? ` (${details.extra})` : ''}`);
    this.name = new.target.name;
    this.type = details.type;
    this.extra = details.extra;
    this.status = details.status;
    this.operation = details.operation;
    this.retryAfterSeconds = details.retryAfterSeconds;
  }

  /** Remembers what the caller knew about the call (the first context attached wins; csrf is never kept). */
  withContext(context: CallContext): this {
    if (this.context === undefined) {
      const { csrf: _csrf, ...params } = context.params ?? {};
      this.context = { ...context, params };
    }
    return this;
  }
}

/** Incorrect e-mail address or password (`unauthorized_error`, also spelled `unauthorized`). */
export class UnauthorizedError extends GroupsError {
  /** The account needs a two-factor code and none (or a wrong one) was given. */
  get twoFactorRequired(): boolean {
    return this.extra === 'two_factor_required';
  }
}
/** `bad_request`: the parameters were wrong (a missing one, an id that does not exist); `extra` says which. */
export class BadRequestError extends GroupsError {}
/**
 * The group named does not exist or is not visible to the caller: `group_not_found` (the real service's
 * type, also our extension calls') or the spec's `bad_request` with `invalid group_id` / `invalid
 * group_name` (docs/protocol.md "Extensions"). A BadRequestError either way, so older checks still hold.
 */
export class GroupNotFoundError extends BadRequestError {}
/** `authentication`: the request's credentials were not accepted (a revoked token, a session that ended). */
export class AuthenticationError extends GroupsError {}
/** `expired`: the authentication token is too old; log in again for a new one. */
export class ExpiredError extends GroupsError {}
/**
 * `rate_limit` (HTTP 429): too many requests too quickly. `retryAfterSeconds` says how long to wait
 * when the service said it; the client's retries (RetryOptions) already waited that long before giving up.
 */
export class RateLimitError extends GroupsError {}
/** `inadequate_permissions`: the caller lacks the permission flag the operation needs (`extra` names it, as our service sends it). */
export class InadequatePermissionsError extends GroupsError {}
/** `invalid_value`: a parameter's value is not one the service recognizes; {@link InvalidValueError.field} names the parameter. */
export class InvalidValueError extends GroupsError {
  /** The field whose value was not recognized (the error's extra, spec part 7). */
  get field(): string {
    return this.extra;
  }
}
/** `server`: a problem on the service's side; the same call may work when tried again later. */
export class ServerError extends GroupsError {}
/** `bad_csrf`: a state-changing call lacked the session's csrf token or had a wrong one (the client adds it itself). */
export class BadCsrfError extends GroupsError {}
/** An error type this client does not know. */
export class UnknownGroupsError extends GroupsError {}

/** The 24-hour archive rule: says when the next download is allowed. */
export class ArchiveDownloadLimitError extends RateLimitError {
  constructor(details: ErrorDetails, readonly nextAllowedAt: Date) {
    super(details, `${details.operation}: the archive may be downloaded once per 24 hours; next allowed at ${nextAllowedAt.toISOString()}`);
  }
}

/** The answer was not the JSON the spec promises (an HTML error page, a proxy's text, a cut body). */
export class ResponseFormatError extends GroupsError {
  constructor(operation: string, status: number, readonly contentType: string, readonly bodyStart: string) {
    super(
      { type: 'response_format', extra: bodyStart, status, operation },
      `${operation}: expected a JSON answer, got HTTP ${status} ${contentType || 'without a content type'}: ${JSON.stringify(bodyStart)}`,
    );
  }
}

/** The request never got an answer (connection refused, reset, TLS failure, timeout). */
export class TransportError extends GroupsError {
  constructor(operation: string, override readonly cause: unknown, readonly sent: boolean) {
    super(
      { type: 'transport', extra: (cause as Error)?.message ?? String(cause), status: 0, operation },
      `${operation}: ${(cause as Error)?.message ?? String(cause)}`,
    );
  }
}

const CLASSES: Record<string, new (details: ErrorDetails) => GroupsError> = {
  unauthorized_error: UnauthorizedError,
  unauthorized: UnauthorizedError,
  bad_request: BadRequestError,
  authentication: AuthenticationError,
  expired: ExpiredError,
  rate_limit: RateLimitError,
  inadequate_permissions: InadequatePermissionsError,
  invalid_value: InvalidValueError,
  server: ServerError,
  bad_csrf: BadCsrfError,
  group_not_found: GroupNotFoundError,
};

/** The error object of spec 2.2 as the matching class. */
export function errorFromObject(body: { type?: unknown; extra?: unknown }, status: number, operation: string, retryAfter?: string): GroupsError {
  const type = typeof body.type === 'string' ? body.type : 'unknown';
  const extra = typeof body.extra === 'string' ? body.extra : '';
  const retryAfterSeconds = parseRetryAfter(retryAfter);
  const details = { type, extra, status, operation, retryAfterSeconds };
  const nextAllowed = /next allowed at (\S+)$/.exec(extra)?.[1];
  // Only the 24-hour rule says when the next download is allowed; any other 429 is an ordinary one.
  if (type === 'rate_limit' && operation === 'downloadarchives' && nextAllowed) {
    const at = new Date(nextAllowed);
    const fallback = new Date(Date.now() + (retryAfterSeconds ?? 86_400) * 1000);
    return new ArchiveDownloadLimitError(details, Number.isNaN(at.getTime()) ? fallback : at);
  }
  if (type === 'bad_request' && /^invalid group_(id|name)$/.test(extra)) return new GroupNotFoundError(details);
  const Class = CLASSES[type] ?? UnknownGroupsError;
  return new Class(details);
}

/** Retry-After as seconds: a number of seconds, or an HTTP date. */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}
