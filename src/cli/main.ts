#!/usr/bin/env node
import { demo } from './demo.js';
import { serve } from './serve.js';
import { UsageError } from './usage-error.js';

const HELP = `Usage: groupwire <command> [options]

Commands:
  serve    run the local Group Discussion Service (HTTPS and WSS)
  demo     the local service with the demo seed on port 8443 and a guide (what npm start runs)

Run 'groupwire <command> --help' for a command's options.
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'serve':
      await serve(args);
      return 0;
    case 'demo':
      await demo(args);
      return 0;
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(HELP);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`groupwire: ${error.message}\nRun 'groupwire --help' for usage.\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`groupwire: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  },
);
