import { watchFile, unwatchFile, type Stats } from 'node:fs';
import type { Logger } from 'pino';
import { AuthenticationError, InadequatePermissionsError, UnauthorizedError, type GroupsError } from '../api/errors.js';
import { reasonOf } from '../api/failure-fields.js';
import type { Credentials } from '../api/session.js';
import { sleep } from '../chat/backoff.js';
import { loadBotsConfig, type BotConfig } from '../config/bots-config.js';
import { ConfigError, YamlSource } from '../config/yaml-source.js';

export type LoginConfig = BotConfig['login'];

/**
 * How long a bot whose login was refused waits before trying again by itself when bots.yaml does not
 * change: long enough not to hammer the service (or lock the account) with a password known to be
 * wrong, short enough that an account re-enabled on the service side is back within the quarter hour.
 */
export const LOGIN_RETRY_MS = 15 * 60_000;

/** A retry interval as said to a person: "15 minutes", "90 s". */
export function waitText(ms: number): string {
  return ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}` : `${Math.round(ms / 1000)} s`;
}

/** How often bots.yaml is looked at while a bot waits (a stat, nothing more). */
const FILE_POLL_MS = 1000;

/** The bot's account may log in but may not use any of its groups (banned, or not a member). */
export class AccountNotAllowedError extends Error {
  override name = 'AccountNotAllowedError';
  constructor(readonly groups: string[], readonly refusal: GroupsError) {
    super(`not allowed in group ${groups.join(', ')}: ${refusal.message}`);
  }
}

/** Whether a chat's set-up failed because the account may not use the chat's group at all. */
export function isGroupRefusal(error: unknown): error is InadequatePermissionsError {
  // Making a chat (`manage_chats`) is a permission a member may lack; that is the chat's problem, not the account's.
  return error instanceof InadequatePermissionsError && error.operation !== 'newchat';
}

/** A login the service refuses: nothing but a fix (in bots.yaml or on the service) will change that. */
export interface LoginRefusal {
  bot: string;
  /** The account: its e-mail address, or "an API token". */
  account: string;
  /** What the service said, in words, with the raw type and extra. */
  said: string;
  /** What to do about it, naming the place in bots.yaml. */
  fix: string;
}

export function credentialsOf(login: LoginConfig): Credentials {
  return 'email' in login
    ? { email: login.email, password: login.password, twofactor: login.twofactor }
    : { token: login.token, scheme: login.scheme };
}

/** The one line that says a refusal: who, as whom, what the service said, and what to do. */
export function describeRefusal(refusal: LoginRefusal): string {
  return `bot ${refusal.bot} cannot log in as ${refusal.account}: ${refusal.said}. ${refusal.fix}`;
}

/**
 * The refusal `error` is, if it is one: a wrong e-mail address or password or two-factor code
 * (`unauthorized_error`), a token the service does not know (`authentication` with a token login: an
 * e-mail login would have been renewed), or an account that may not use any of the bot's groups.
 * `configFile` is read (without ${ENV} expansion) to name the line to fix.
 */
export async function loginRefusalOf(error: unknown, bot: string, login: LoginConfig, configFile: string | undefined): Promise<LoginRefusal | undefined> {
  const account = 'email' in login ? login.email : 'an API token';
  const raw = (e: GroupsError) => (e.extra ? `${e.type}: ${e.extra}` : e.type);
  if (error instanceof UnauthorizedError) {
    if (error.twoFactorRequired || error.extra === 'invalid twofactor') {
      const where = await placeOf(configFile, bot, 'login');
      return {
        bot, account, said: `the account asks for a two-factor code (${raw(error)})`,
        fix: `A bot cannot type one: log it in with an API token instead (login: { token: ... })${where.at}.`,
      };
    }
    const where = await placeOf(configFile, bot, 'password');
    return { bot, account, said: `the e-mail address or password is wrong (${raw(error)})`, fix: fixLine('password', where) };
  }
  if (error instanceof AuthenticationError && 'token' in login) {
    const where = await placeOf(configFile, bot, 'token');
    return { bot, account, said: `the service does not accept the token (${raw(error)})`, fix: fixLine('token', where) };
  }
  if (error instanceof AccountNotAllowedError) {
    const where = await placeOf(configFile, bot, 'email' in login ? 'email' : 'token');
    return {
      bot, account,
      said: `the account is banned from (or not a member of) group ${error.groups.join(', ')} (${raw(error.refusal)})`,
      fix: `Have a moderator readmit it, or log the bot in as another account${where.at}.`,
    };
  }
  return undefined;
}

interface Place {
  /** " in bots.yaml:12:17" or "". */
  at: string;
  /** The ${NAME} the value comes from, when it is only that. */
  variable?: string;
}

function fixLine(what: 'password' | 'token', where: Place): string {
  if (where.variable) {
    return `The ${what} comes from \${${where.variable}}${where.at}: set that variable right and restart, or write the ${what} there.`;
  }
  return `Fix the ${what}${where.at}.`;
}

/** Where the bot's login `key` stands in the file as written (before ${ENV} expansion). */
async function placeOf(configFile: string | undefined, bot: string, key: 'password' | 'token' | 'email' | 'login'): Promise<Place> {
  if (!configFile) return { at: '' };
  try {
    const source = await YamlSource.read(configFile);
    const bots = (source.toJS() as { bots?: Array<{ name?: unknown; login?: Record<string, unknown> }> }).bots ?? [];
    const index = bots.findIndex((entry) => entry?.name === bot);
    if (index < 0) return { at: ` in ${configFile}` };
    const path = key === 'login' ? ['bots', index, 'login'] : ['bots', index, 'login', key];
    const value = key === 'login' ? undefined : bots[index]!.login?.[key];
    const variable = typeof value === 'string' ? /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}$/.exec(value)?.[1] : undefined;
    return { at: ` in ${source.where(path)}`, variable };
  } catch {
    return { at: ` in ${configFile}` };
  }
}

export interface LoginWaitOptions {
  bot: string;
  configFile: string | undefined;
  log: Logger;
  signal: AbortSignal;
  retryMs?: number;
}

/**
 * After a refusal: waits for bots.yaml to change (then reads the bot's login from it again, ${ENV}
 * expanded as at start) or for `retryMs`. Answers the login to try next, or undefined when stopping.
 * A file that does not load (half saved, a mistake) is reported and waited past.
 */
export async function waitForLoginFix(current: LoginConfig, options: LoginWaitOptions): Promise<LoginConfig | undefined> {
  const { configFile, signal, log } = options;
  for (;;) {
    const changed = await fileChangeOrTimeout(configFile, options.retryMs ?? LOGIN_RETRY_MS, signal);
    if (signal.aborted) return undefined;
    if (!changed) {
      log.info('trying the refused login again (the retry interval is up)');
      return current;
    }
    // An editor may write the file in more than one go: let it finish.
    await sleep(300, signal);
    if (signal.aborted) return undefined;
    try {
      const loaded = await loadBotsConfig(configFile!);
      const fresh = loaded.config.bots.find((entry) => entry.name === options.bot);
      if (!fresh) {
        log.warn({ file: configFile }, `${configFile} changed but has no bot named ${options.bot} any more; still waiting`);
        continue;
      }
      log.info({ file: configFile }, `${configFile} changed; trying the login again`);
      return fresh.login;
    } catch (error) {
      const reason = error instanceof ConfigError ? error.problems.join('; ') : reasonOf(error);
      log.warn({ file: configFile, reason }, `${configFile} changed but cannot be used; still waiting for a fix`);
    }
  }
}

/** True when the file's stat changes, false after `ms` (or at once when stopping). */
function fileChangeOrTimeout(file: string | undefined, ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const finish = (changed: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (file) unwatchFile(file, onStat);
      resolve(changed);
    };
    const onAbort = () => finish(false);
    // A stat poll rather than fs.watch: editors that save by writing a new file and renaming it over
    // the old one end an fs.watch on the old inode, and polling once a second costs nothing.
    const onStat = (now: Stats, before: Stats) => {
      if (now.mtimeMs !== before.mtimeMs || now.size !== before.size || now.ino !== before.ino) finish(true);
    };
    const timer = setTimeout(() => finish(false), ms);
    if (signal.aborted) return finish(false);
    signal.addEventListener('abort', onAbort, { once: true });
    if (file) watchFile(file, { interval: FILE_POLL_MS, persistent: true }, onStat);
  });
}
