#!/usr/bin/env node
import { CommandUsageError, inCommand } from './command.js';
import { EXIT, redact, reportError } from './output.js';
import { UsageError } from './usage-error.js';

const HELP = `Usage: groupwire <command> [options]

Commands:
  run        run the bots of bots.yaml (groupwire run [bots.yaml])
  check      validate bots.yaml without connecting
  status     what a running groupwire run is doing: bots, chats, plugins, last errors (--json)
  reload     make a running groupwire run read bots.yaml again and apply what changed, without a restart
  plugins    the built-in plugins, one line each, with their docs pages
  new-plugin write a ready plugin folder: TypeScript, typed options, a test (groupwire new-plugin NAME)
  test-plugin run a plugin's tests (node:test), loading TypeScript as run does
  chat       talk in a chat interactively (groupwire chat --as bob general)
  demo       the demo: local service, demo bot and a scripted member (what npm start runs)
  serve      run the local Group Discussion Service (HTTPS and WSS)
  api        call any operation and print its JSON answer (groupwire api getchats --group_name demo)
  groups     the groups you are subscribed to: names, ids, your standing
  archive    download a group's archive as an mbox, or search it (archive download | archive search)
  activity   a group's activity log (moderators)
  topics     a group's topics
  transcript a chat's transcript for a period, from the logger's files or the service (transcript export)
  logout     end the session of an API token (GROUPWIRE_TOKEN or --token)

The client commands (chat, api, groups, archive, activity, topics, transcript export, logout) find the
service and log in from flags (--url, --ca-file, --email, --password, --twofactor, --token) or the
environment: GROUPWIRE_URL, GROUPWIRE_CA_FILE, and GROUPWIRE_EMAIL with GROUPWIRE_PASSWORD, or
GROUPWIRE_TOKEN (chat also takes --as MEMBER). Without GROUPWIRE_URL they use the demo or serve running from this
directory (.groupwire/demo.json). Exit codes: 0 done, 1 an error from the service (or the network,
or the demo is not running), 2 a usage mistake.

Run 'groupwire <command> --help' for a command's options.
`;

type Command = (args: string[]) => Promise<number>;

/**
 * Each command's module is loaded when that command runs (#20): `groupwire run` against a remote
 * service loads no part of the local service, `groupwire api` no part of the supervisor.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: async () => {
    const { serve } = await import('./serve.js');
    return async (args) => {
      await serve(args);
      return EXIT.ok;
    };
  },
  demo: async () => (await import('./demo.js')).demo,
  run: async () => (await import('./run-command.js')).runCommand,
  check: async () => (await import('./run-command.js')).checkCommand,
  plugins: async () => (await import('./plugins-command.js')).pluginsCommand,
  'new-plugin': async () => (await import('./new-plugin-command.js')).newPluginCommand,
  'test-plugin': async () => (await import('./test-plugin-command.js')).testPluginCommand,
  chat: async () => (await import('./chat-command.js')).chatCommand,
  api: async () => (await import('./api-command.js')).apiCommand,
  groups: async () => (await import('./groups-command.js')).groupsCommand,
  archive: async () => (await import('./archive-command.js')).archiveCommand,
  activity: async () => (await import('./activity-command.js')).activityCommand,
  topics: async () => (await import('./topics-command.js')).topicsCommand,
  transcript: async () => (await import('./transcript-command.js')).transcriptCommand,
  logout: async () => (await import('./logout-command.js')).logoutCommand,
  status: async () => (await import('./status-command.js')).statusCommand,
  reload: async () => (await import('./reload-command.js')).reloadCommand,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command !== undefined && Object.hasOwn(COMMANDS, command)) {
    const run = await COMMANDS[command]!();
    return inCommand(command, () => run(args));
  }
  switch (command) {
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(HELP);
      return command === undefined ? EXIT.usage : EXIT.ok;
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

// `groupwire api ... | head`: a reader that stops early is no error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.ok);
  throw error;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      const where = error instanceof CommandUsageError ? `groupwire ${error.command}` : 'groupwire';
      process.stderr.write(redact(`groupwire: ${error.message}\nRun '${where} --help' for usage.\n`));
      process.exitCode = EXIT.usage;
    } else {
      process.exitCode = reportError(error);
    }
  },
);
