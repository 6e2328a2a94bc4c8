import { createClient, MatrixError, type IRequestOpts, type MatrixClient } from 'matrix-js-sdk';
import { logger as sdkGlobalLogger } from 'matrix-js-sdk/lib/logger.js';
import type { Logger } from 'pino';
import type { KeyValueStore } from '../../src/index.js';
import type { RelayMatrixOptions } from './options.js';

/** What a password login left in the plugin's store, so a restart does not log in (and make a device) again. */
interface StoredSession {
  homeserver: string;
  user: string;
  user_id: string;
  access_token: string;
  device_id?: string;
}
const SESSION_KEY = 'session';

/** The SDK's module-level logger writes to the console through loglevel: quiet it; clients log to pino instead. */
sdkGlobalLogger.setLevel('silent');

type SdkLogger = NonNullable<Parameters<typeof createClient>[0]['logger']>;

/** The SDK's logger interface on pino: its chatter at debug, its warnings and errors as such (URLs are sanitised by the SDK). */
function sdkLogger(log: Logger): SdkLogger {
  const line = (args: unknown[]) => args.map((arg) => (arg instanceof Error ? arg.message : typeof arg === 'string' ? arg : JSON.stringify(arg))).join(' ');
  return {
    trace: (...args: unknown[]) => log.trace({ sdk: true }, line(args)),
    debug: (...args: unknown[]) => log.debug({ sdk: true }, line(args)),
    info: (...args: unknown[]) => log.debug({ sdk: true }, line(args)),
    warn: (...args: unknown[]) => log.warn({ sdk: true }, line(args)),
    error: (...args: unknown[]) => log.error({ sdk: true }, line(args)),
    getChild: () => sdkLogger(log),
  };
}

/** The homeserver refused the account (unknown or expired token, wrong password, deactivated): trying again changes nothing. */
export function isRefusal(error: unknown): error is MatrixError {
  return error instanceof MatrixError && (error.httpStatus === 401 || error.httpStatus === 403) &&
    ['M_UNKNOWN_TOKEN', 'M_MISSING_TOKEN', 'M_FORBIDDEN', 'M_USER_DEACTIVATED', 'M_INVALID_USERNAME'].includes(error.errcode ?? '');
}

/**
 * Logs the relay in and answers a client with a token the homeserver accepted (checked by /whoami).
 * With `access_token`, that token; with `user` and `password`, the token kept from the last login
 * while the homeserver still takes it, else a new password login (on the same device as before, so
 * transaction ids stay the device's and no device piles up). Throws what the homeserver answered:
 * a refusal (isRefusal) is final, anything else (network, 5xx) is worth trying again. A stop aborts it.
 */
export async function openSession(options: RelayMatrixOptions, store: KeyValueStore, log: Logger, stopping: AbortSignal): Promise<MatrixClient> {
  const make = (accessToken?: string, userId?: string, deviceId?: string) => {
    const client = createClient({
      baseUrl: options.homeserver, logger: sdkLogger(log), localTimeoutMs: options.request_timeout_ms, useAuthorizationHeader: true,
      ...(accessToken ? { accessToken } : {}), ...(userId ? { userId } : {}), ...(deviceId ? { deviceId } : {}),
    });
    // A stop ends whatever the client is waiting for (a login, a join, a long poll) at once.
    stopping.addEventListener('abort', () => client.http.abort(), { once: true });
    return client;
  };
  if (options.access_token !== undefined) {
    const client = make(options.access_token, options.user_id);
    const me = await client.whoami();
    if (me.user_id !== options.user_id) log.warn({ user_id: options.user_id, token_user: me.user_id }, 'the access token belongs to another user than user_id: using the token\'s');
    return me.user_id === options.user_id ? client : make(options.access_token, me.user_id);
  }
  const stored = store.get<StoredSession>(SESSION_KEY);
  const ours = stored && stored.homeserver === options.homeserver && stored.user === options.user ? stored : undefined;
  if (ours) {
    const client = make(ours.access_token, ours.user_id, ours.device_id);
    try {
      await client.whoami();
      return client;
    } catch (error) {
      if (!isRefusal(error)) throw error;
      log.info({ errcode: error.errcode }, 'the homeserver no longer takes the kept Matrix token: logging in with the password again');
      store.delete(SESSION_KEY);
    }
  }
  const answer = await make().loginRequest({
    type: 'm.login.password', identifier: { type: 'm.id.user', user: options.user! }, password: options.password!,
    initial_device_display_name: 'groupwire relay', ...(stored?.device_id ? { device_id: stored.device_id } : {}),
  });
  store.set(SESSION_KEY, {
    homeserver: options.homeserver, user: options.user!, user_id: answer.user_id, access_token: answer.access_token, device_id: answer.device_id,
  } satisfies StoredSession);
  log.info({ user_id: answer.user_id, device_id: answer.device_id }, 'logged in to Matrix with the password');
  return make(answer.access_token, answer.user_id, answer.device_id);
}

/**
 * Per-request options for the SDK's HTTP layer. Its type picks `priority` from the DOM's RequestInit,
 * which Node's types declare as required: the SDK itself never sets it, nor does the relay.
 */
export function requestOptions(options: { abortSignal: AbortSignal; localTimeoutMs?: number }): IRequestOpts {
  return options as IRequestOpts;
}
