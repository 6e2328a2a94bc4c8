import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { dirname, resolve } from 'node:path';
import { DEFAULT_OPS_LISTEN } from '../config/bots-config.js';
import { ConfigError, YamlSource } from '../config/yaml-source.js';
import { UsageError } from './usage-error.js';

/**
 * How `groupwire status` and `groupwire reload` find a running `groupwire run`: the few settings of its
 * bots.yaml they need, and the ops.json it keeps in its state dir.
 */

/**
 * state_dir and ops: of bots.yaml, read leniently: a variable that is not set in this shell (a secret a
 * service manager gives groupwire run) reads as empty, and a file with a mistake elsewhere is still read
 * (the running process refuses it on reload, with where the mistake is).
 */
export async function readOpsSettings(file: string): Promise<{ stateDir: string; listen?: string; token?: string }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}): give the bots.yaml groupwire run runs`);
  }
  let raw: { state_dir?: unknown; ops?: unknown } = {};
  try {
    const source = YamlSource.parse(text, file);
    try {
      source.interpolate(process.env);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
    }
    raw = (source.toJS() ?? {}) as typeof raw;
  } catch (error) {
    // A YAML mistake: what can be read of it still is (the running process says where the mistake is).
    if (!(error instanceof ConfigError)) throw error;
    const partial: unknown = parseDocument(text).toJS();
    if (typeof partial === 'object' && partial !== null) raw = partial as typeof raw;
  }
  const dir = dirname(resolve(file));
  const stateDir = resolve(dir, typeof raw.state_dir === 'string' ? raw.state_dir : './.groupwire');
  if (raw.ops === false) return { stateDir };
  const ops = (typeof raw.ops === 'object' && raw.ops !== null ? raw.ops : {}) as { listen?: unknown; token?: unknown };
  return {
    stateDir,
    listen: typeof ops.listen === 'string' ? ops.listen : DEFAULT_OPS_LISTEN,
    token: typeof ops.token === 'string' ? nonEmpty(ops.token) : undefined,
  };
}

/** ops.json of a process; `alive` false when the process it names is gone (a stale file). */
export function readOpsFile(file: string): { pid: number; url?: string; alive: boolean } | undefined {
  let parsed: { pid?: unknown; url?: unknown };
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as typeof parsed;
  } catch {
    return undefined;
  }
  if (typeof parsed.pid !== 'number') return undefined;
  let alive = true;
  try {
    process.kill(parsed.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') alive = false;
  }
  return { pid: parsed.pid, alive, ...(typeof parsed.url === 'string' ? { url: parsed.url } : {}) };
}

export function nonEmpty(text: string | undefined): string | undefined {
  return text === undefined || text === '' ? undefined : text;
}

/** `: <why>` from an operations endpoint's error answer (`{"error": "..."}`), or nothing. */
export function endpointError(text: string): string {
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    return typeof error === 'string' ? `: ${error}` : '';
  } catch {
    return '';
  }
}
