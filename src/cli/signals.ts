import { sayOnStderr } from '../supervisor/stderr-sink.js';

/**
 * Signals for the long-running commands (serve, demo, run): a first SIGINT/SIGTERM stops cleanly, a
 * second exits at once; SIGHUP is ignored with a notice, or reloads (run). A module of its own so that
 * `groupwire run` does not load serve's (#20).
 */

/** What a SIGHUP does to serve and the demo: nothing but a line saying so (see ignoreHangup; groupwire run reloads). */
export type HangupNotice = (message: string) => void;

const HANGUP_MESSAGE = 'SIGHUP ignored: this command does not reload its configuration (groupwire run does); restart it to apply changes';
let hangupIgnored = false;

/**
 * SIGHUP would end the process (Node's default): a closed terminal, or `kill -HUP` sent by habit to
 * ask for a reload, would drop every socket. serve and the demo say so and ignore it. `notice`
 * defaults to a line on stderr; commands with a logger pass it. Installed once per process.
 */
export function ignoreHangup(notice: HangupNotice = (message) => sayOnStderr(`groupwire: ${message}`), message = HANGUP_MESSAGE): void {
  if (hangupIgnored) return;
  hangupIgnored = true;
  process.on('SIGHUP', () => notice(message));
}

/** SIGHUP runs `handler` (`groupwire run` reloads bots.yaml) instead of being ignored. Installed once per process. */
export function onHangup(handler: () => void): void {
  if (hangupIgnored) return;
  hangupIgnored = true;
  process.on('SIGHUP', handler);
}

/**
 * Resolves after the first SIGINT/SIGTERM has been handled; a second signal exits at once. SIGHUP is
 * ignored (ignoreHangup), with `notice` if none was installed yet.
 */
export function stopOnSignal(stop: () => Promise<void>, notice?: HangupNotice): Promise<void> {
  ignoreHangup(notice);
  return new Promise((resolve, reject) => {
    let stopping = false;
    const onSignal = () => {
      if (stopping) process.exit(130);
      stopping = true;
      stop().then(resolve, reject);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
