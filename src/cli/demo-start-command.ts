import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The commands that start the demo, as the demo and the client commands say them to a user. */
export interface DemoStartCommands {
  /** Starts it, or continues the saved conversation: `npm start` or `npx groupwire demo`. */
  start: string;
  /** Starts over: `npm start -- --fresh` or `npx groupwire demo --fresh`. */
  fresh: string;
}

/**
 * How the demo is started from `cwd`: `npm start` in groupwire's own checkout (its package.json's
 * start script runs the demo), `npx groupwire demo` anywhere else (a project that installed groupwire,
 * where npm start is the project's own or missing, or any other folder). The words a user reads name
 * a command that works where they are.
 */
export function demoStartCommands(cwd = process.cwd()): DemoStartCommands {
  return isGroupwireCheckout(cwd)
    ? { start: 'npm start', fresh: 'npm start -- --fresh' }
    : { start: 'npx groupwire demo', fresh: 'npx groupwire demo --fresh' };
}

/** Whether `cwd` holds groupwire's package.json with a start script that runs the demo. */
function isGroupwireCheckout(cwd: string): boolean {
  let manifest: { name?: unknown; scripts?: { start?: unknown } };
  try {
    manifest = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')) as typeof manifest;
  } catch {
    // No package.json here, or not JSON: not the checkout.
    return false;
  }
  const start = manifest?.scripts?.start;
  return manifest?.name === 'groupwire' && typeof start === 'string' && start.split(' ').includes('demo');
}
