import type { Logger } from 'pino';
import { configPath, type LoadedConfig } from '../config/bots-config.js';
import { Worker } from '../coordination/worker.js';
import { Operations } from '../ops/operations.js';
import type { RecentErrors } from '../ops/recent-errors.js';
import { exitIfStillHeld } from './exit-after-stop.js';
import { onHangup, stopOnSignal } from './signals.js';

/**
 * `groupwire run` of a bots.yaml with `coordination:`: this process is one worker of several sharing
 * its bots through Redis (docs/scale-out.md). SIGTERM hands every unit over before it exits; SIGHUP
 * (or `groupwire reload`) re-reads bots.yaml and restarts only the units whose part of it changed.
 */
export async function runWorker(loaded: LoadedConfig, file: string, log: Logger, errors: RecentErrors): Promise<number> {
  let reload: (() => Promise<unknown>) | undefined;
  onHangup(() => {
    if (reload) void reload();
    else log.warn('SIGHUP while starting: ignored; send it again once the worker is up to reload bots.yaml');
  });
  let operations: Operations | undefined;
  const worker = await Worker.start(loaded, { log, opsUrl: () => operations?.url });
  const reloads = { applied: 0, refused: 0 };
  let lastReload: { at: string; applied: boolean; changes: string[]; problems: string[] } | undefined;
  reload = async () => {
    const outcome = await worker.reload(file);
    reloads[outcome.applied ? 'applied' : 'refused'] += 1;
    lastReload = { at: new Date().toISOString(), ...outcome };
    if (outcome.applied) log.info({ changes: outcome.changes }, 'bots.yaml reloaded');
    else log.warn({ problems: outcome.problems }, 'bots.yaml not reloaded: the running config goes on');
    return outcome;
  };
  operations = new Operations({
    supervisor: worker, config: loaded.config.ops, log, errors, stateDir: configPath(loaded, loaded.config.state_dir),
    reload, lastReload: () => lastReload, reloads: () => reloads,
  });
  await operations.start();
  await stopOnSignal(async () => {
    // The units first (handed over while this worker still answers /status), then the endpoint.
    await worker.stop();
    await operations!.close();
  });
  exitIfStillHeld(log, 0);
  return 0;
}
