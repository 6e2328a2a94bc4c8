import { CLIENT_HELP, CLIENT_OPTIONS, clientFromFlags } from './client-options.js';
import { parseFlags } from './command.js';
import { EXIT, writeOut } from './output.js';
import { UsageError } from './usage-error.js';

export const LOGOUT_HELP = `Usage: groupwire logout [--token TOKEN]

Ends the session of an API token (--token or GROUPWIRE_TOKEN): the token, the cookie and the csrf of
its login stop working at once, and its chat sockets close. logout is groupwire's own extension of the
interface: the local service has it, another service may not.

groupwire keeps no login between commands: a command run with an e-mail address and password logs in
for itself, so there is no saved session for logout to end.

Options:
  -h, --help               this text

${CLIENT_HELP}`;

export async function logoutCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({ args, options: { help: { type: 'boolean', short: 'h' }, ...CLIENT_OPTIONS } });
  if (values.help) {
    writeOut(LOGOUT_HELP);
    return EXIT.ok;
  }
  const client = clientFromFlags(values);
  try {
    if (!client.session.credentials || !('token' in client.session.credentials)) {
      throw new UsageError('groupwire keeps no login between commands, so an e-mail address and password have no saved '
        + 'session to end; logout ends the session of an API token (--token or GROUPWIRE_TOKEN)');
    }
    const ended = await client.logout();
    writeOut(ended ? 'logged out: the token no longer works\n' : 'nothing to end: the token was not logged in (unknown, expired or logged out before)\n');
    return EXIT.ok;
  } finally {
    await client.close();
  }
}
