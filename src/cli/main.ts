#!/usr/bin/env node
import { activityCommand } from './activity-command.js';
import { apiCommand } from './api-command.js';
import { archiveCommand } from './archive-command.js';
import { chatCommand } from './chat-command.js';
import { CommandUsageError, inCommand } from './command.js';
import { demo } from './demo.js';
import { groupsCommand } from './groups-command.js';
import { logoutCommand } from './logout-command.js';
import { EXIT, redact, reportError } from './output.js';
import { newPluginCommand } from './new-plugin-command.js';
import { pluginsCommand } from './plugins-command.js';
import { reloadCommand } from './reload-command.js';
import { checkCommand, runCommand } from './run-command.js';
import { serve } from './serve.js';
import { statusCommand } from './status-command.js';
import { testPluginCommand } from './test-plugin-command.js';
import { topicsCommand } from './topics-command.js';
import { transcriptCommand } from './transcript-command.js';
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

The client commands (api, groups, archive, activity, topics, transcript export, logout) find the service and log in from flags or the
environment: GROUPWIRE_URL, GROUPWIRE_CA_FILE, and GROUPWIRE_EMAIL with GROUPWIRE_PASSWORD, or
GROUPWIRE_TOKEN. Without GROUPWIRE_URL they (and chat) use the demo or serve running from this
directory (.groupwire/demo.json). Exit codes: 0 done, 1 an error from the service (or the network,
or the demo is not running), 2 a usage mistake.

Run 'groupwire <command> --help' for a command's options.
`;

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  serve: async (args) => {
    await serve(args);
    return EXIT.ok;
  },
  demo,
  run: runCommand,
  check: checkCommand,
  plugins: pluginsCommand,
  'new-plugin': newPluginCommand,
  'test-plugin': testPluginCommand,
  chat: chatCommand,
  api: apiCommand,
  groups: groupsCommand,
  archive: archiveCommand,
  activity: activityCommand,
  topics: topicsCommand,
  transcript: transcriptCommand,
  logout: logoutCommand,
  status: statusCommand,
  reload: reloadCommand,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command !== undefined && Object.hasOwn(COMMANDS, command)) return inCommand(command, () => COMMANDS[command]!(args));
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
