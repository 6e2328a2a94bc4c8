import { accessSync, constants } from 'node:fs';
import { GroupsClient, type Credentials } from '../api/index.js';
import { registerSecret } from './output.js';
import { DEMO_FILE, DEMO_RETRY, demoNotRunning, DemoNotRunningError, findService } from './service-address.js';
import { UsageError } from './usage-error.js';

/** The flags every client command takes (parseArgs form). */
export const CLIENT_OPTIONS = {
  url: { type: 'string' },
  'ca-file': { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  token: { type: 'string' },
  'token-scheme': { type: 'string' },
  twofactor: { type: 'string' },
} as const;

export type ClientFlagName = keyof typeof CLIENT_OPTIONS;
export type ClientFlags = Partial<Record<ClientFlagName, string>>;

export const CLIENT_HELP = `Service and credentials (flags win over the environment):
  --url URL                GROUPWIRE_URL       the service's base address (https://host[:port]); without
                                               either, the demo or serve running from this directory
                                               (${DEMO_FILE}, with its ca_file)
  --ca-file FILE           GROUPWIRE_CA_FILE   a CA to trust besides the system's (the local service's ca_file)
  --email ADDRESS          GROUPWIRE_EMAIL     log in with an e-mail address ...
  --password PASSWORD      GROUPWIRE_PASSWORD  ... and password (prefer the environment: flags show in ps)
  --twofactor CODE                             a two-factor code, when the account needs one
  --token TOKEN            GROUPWIRE_TOKEN     or an API token instead of e-mail and password
  --token-scheme S         GROUPWIRE_TOKEN_SCHEME  basic (default) or bearer
`;

/**
 * Where to find the service and how to log in, from the flags, else the environment, else (the
 * address only) the demo file of the working directory. A token (flag, then environment) wins over an
 * e-mail address and password from the same place; flags win over the environment. No account is
 * guessed: with the demo's address and no credentials, the error says what to set.
 */
export function resolveClientSettings(flags: ClientFlags, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): {
  baseUrl: string; caFile: string | undefined; credentials: Credentials; fromDemoFile: boolean;
} {
  const value = (text: string | undefined) => (text === undefined || text === '' ? undefined : text);
  const service = findService({ url: flags.url, caFile: flags['ca-file'] }, env, cwd);
  const { url: baseUrl, caFile } = service;
  let credentials: Credentials;
  try {
    credentials = resolveCredentials(flags, env, value);
  } catch (error) {
    if (!(error instanceof NoCredentialsError) || !service.fromDemoFile) throw error;
    throw new UsageError(`no credentials for the demo at ${baseUrl} (found in ${DEMO_FILE}): set GROUPWIRE_EMAIL and `
      + 'GROUPWIRE_PASSWORD to one of its accounts (README.md lists them: alice, mo, bob, carol), or GROUPWIRE_TOKEN');
  }
  for (const secret of ['password' in credentials ? credentials.password : credentials.token]) registerSecret(secret);
  return { baseUrl, caFile, credentials, fromDemoFile: service.fromDemoFile };
}

function resolveCredentials(flags: ClientFlags, env: NodeJS.ProcessEnv, value: (text: string | undefined) => string | undefined): Credentials {
  const scheme = value(flags['token-scheme']) ?? value(env.GROUPWIRE_TOKEN_SCHEME) ?? 'basic';
  if (scheme !== 'basic' && scheme !== 'bearer') throw new UsageError(`--token-scheme must be basic or bearer, got ${scheme}`);
  const twofactor = value(flags.twofactor);
  const flagToken = value(flags.token);
  if (flagToken) return { token: flagToken, scheme };
  const flagEmail = value(flags.email);
  const flagPassword = value(flags.password);
  if (flagEmail || flagPassword) {
    const email = flagEmail ?? value(env.GROUPWIRE_EMAIL);
    const password = flagPassword ?? value(env.GROUPWIRE_PASSWORD);
    if (!email) throw new UsageError('a password without an e-mail address: set GROUPWIRE_EMAIL or pass --email');
    if (!password) throw new UsageError('an e-mail address without a password: set GROUPWIRE_PASSWORD (or pass --password)');
    return { email, password, twofactor };
  }
  const envToken = value(env.GROUPWIRE_TOKEN);
  if (envToken) return { token: envToken, scheme };
  const email = value(env.GROUPWIRE_EMAIL);
  const password = value(env.GROUPWIRE_PASSWORD);
  if (email && password) return { email, password, twofactor };
  if (email) throw new UsageError('GROUPWIRE_EMAIL is set but not GROUPWIRE_PASSWORD: set it (or pass --password)');
  throw new NoCredentialsError('no credentials: set GROUPWIRE_EMAIL and GROUPWIRE_PASSWORD, or GROUPWIRE_TOKEN (or pass --email/--password or --token)');
}

/** Nothing at all to log in with (not a half-given pair). */
class NoCredentialsError extends UsageError {}

/** A client for the command, from the flags and the environment; mistakes in them are usage errors. */
export function clientFromFlags(flags: ClientFlags, env: NodeJS.ProcessEnv = process.env): GroupsClient {
  const { baseUrl, caFile, credentials, fromDemoFile } = resolveClientSettings(flags, env);
  if (caFile !== undefined) {
    try {
      accessSync(caFile, constants.R_OK);
    } catch (error) {
      // The demo's CA is gone with its state: the file is left from a demo that is over.
      if (fromDemoFile) throw new DemoNotRunningError(`${demoNotRunning()} (the CA file ${caFile} named in ${DEMO_FILE} is gone)`);
      throw new UsageError(`cannot read the CA file ${caFile} (--ca-file or GROUPWIRE_CA_FILE): ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
  }
  try {
    // The demo is local: a refused connection means it is gone, not worth the usual 10 s of retries.
    return new GroupsClient({ baseUrl, caFile, credentials, retry: fromDemoFile ? DEMO_RETRY : undefined });
  } catch (error) {
    throw new UsageError(`--url or GROUPWIRE_URL: ${(error as Error).message}`);
  }
}
