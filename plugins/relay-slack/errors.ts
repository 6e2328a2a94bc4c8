import { ErrorCode } from '@slack/web-api';
import { reasonOf } from '../../src/index.js';

/**
 * What a failed Web API call means for the relay:
 * - `fatal`: the token (or its scopes) is not accepted; retrying cannot help, the relay stops;
 * - `rate_limited`: wait `retryAfterMs` (Slack's Retry-After), then try the same call again;
 * - `permanent`: this one call can never succeed (no such channel, not in it, archived, ...);
 * - `transient`: Slack or the network had a problem; try again after a backoff;
 * - `unknown`: an error code this relay does not know; tried a few times, then treated as permanent.
 */
export type SlackFailure =
  | { kind: 'fatal'; code: string; needed?: string }
  | { kind: 'rate_limited'; code: string; retryAfterMs: number }
  | { kind: 'permanent'; code: string }
  | { kind: 'transient'; code: string }
  | { kind: 'unknown'; code: string };

/** The token is not (or no longer) good: every later call would fail the same way. */
const TOKEN_ERRORS = new Set([
  'invalid_auth', 'not_authed', 'account_inactive', 'token_revoked', 'token_expired', 'team_disabled',
  'user_removed_from_team', 'not_allowed_token_type', 'no_permission', 'ekm_access_denied', 'org_login_required',
  'two_factor_setup_required', 'enterprise_is_restricted', 'invalid_token', 'app_uninstalled',
]);

const PERMANENT_ERRORS = new Set([
  'channel_not_found', 'not_in_channel', 'is_archived', 'msg_too_long', 'no_text', 'too_many_attachments',
  'restricted_action', 'restricted_action_read_only_channel', 'restricted_action_thread_only_channel',
  'restricted_action_non_threadable_channel', 'cannot_reply_to_message', 'invalid_arguments', 'invalid_arg_name',
  'invalid_array_arg', 'invalid_charset', 'invalid_form_data', 'invalid_post_type', 'missing_post_type',
  'invalid_blocks', 'invalid_blocks_format', 'as_user_not_supported', 'team_access_not_granted',
  'user_not_found', 'users_not_found', 'method_deprecated', 'deprecated_endpoint', 'invalid_json', 'json_not_object',
  'message_limit_exceeded', 'channel_is_archived', 'slack_connect_channel_ref_blocked',
  // chat.update and chat.delete of one post
  'message_not_found', 'cant_update_message', 'cant_delete_message', 'edit_window_closed',
  'compliance_exports_prevent_deletion', 'update_failed',
]);

const TRANSIENT_ERRORS = new Set([
  'internal_error', 'fatal_error', 'service_unavailable', 'request_timeout', 'team_added_to_org', 'accesslimited',
]);

interface SdkError {
  code?: string;
  retryAfter?: number;
  statusCode?: number;
  message?: string;
  data?: { error?: string; needed?: string; response_metadata?: { retryAfter?: number } };
}

/** Classifies an error thrown by @slack/web-api's WebClient (also the one inside SocketModeClient). */
export function classify(error: unknown): SlackFailure {
  const e = (error ?? {}) as SdkError;
  switch (e.code) {
    case ErrorCode.RateLimitedError:
      return { kind: 'rate_limited', code: 'ratelimited', retryAfterMs: seconds(e.retryAfter) };
    case ErrorCode.PlatformError: {
      const code = e.data?.error ?? 'unknown_error';
      if (code === 'ratelimited' || code === 'rate_limited') {
        return { kind: 'rate_limited', code, retryAfterMs: seconds(e.data?.response_metadata?.retryAfter) };
      }
      if (code === 'missing_scope') return { kind: 'fatal', code, needed: e.data?.needed };
      if (TOKEN_ERRORS.has(code)) return { kind: 'fatal', code };
      if (PERMANENT_ERRORS.has(code)) return { kind: 'permanent', code };
      if (TRANSIENT_ERRORS.has(code)) return { kind: 'transient', code };
      return { kind: 'unknown', code };
    }
    case ErrorCode.HTTPError:
      return { kind: 'transient', code: `http_${e.statusCode ?? 'error'}` };
    case ErrorCode.RequestError:
      return { kind: 'transient', code: 'request_error' };
    default:
      return { kind: 'transient', code: e.code ?? 'error' };
  }
}

/** True for a token that Slack does not accept (as opposed to one lacking a scope). */
export function isTokenFailure(failure: SlackFailure): boolean {
  return failure.kind === 'fatal' && failure.code !== 'missing_scope';
}

/** Retry-After in seconds (absent or nonsense: 1 s) as milliseconds. */
function seconds(value: number | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.max(value * 1000, 100) : 1000;
}

/**
 * Why a call failed, for a log line next to its code: for `request_error` the network's own words
 * from the error the SDK wraps (`original`): "connect ECONNREFUSED 127.0.0.1:9", "getaddrinfo
 * ENOTFOUND slack.example", "self-signed certificate (DEPTH_ZERO_SELF_SIGNED_CERT)"; else the message.
 */
export function failureReason(error: unknown): string {
  const original = (error as { original?: unknown } | null)?.original;
  return reasonOf(original ?? error);
}

/** One line for a log: what Slack said, without the SDK's long wording. */
export function describe(failure: SlackFailure): string {
  switch (failure.kind) {
    case 'fatal':
      return failure.code === 'missing_scope'
        ? `the token lacks a scope${failure.needed ? ` (needed: ${failure.needed})` : ''}`
        : `Slack does not accept the token (${failure.code})`;
    case 'rate_limited':
      return `rate limited; retrying in ${Math.ceil(failure.retryAfterMs / 1000)} s`;
    default:
      return failure.code;
  }
}
