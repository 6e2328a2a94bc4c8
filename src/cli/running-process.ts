import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { dirname, resolve } from 'node:path';
import { DEFAULT_OPS_LISTEN } from '../config/bots-config.js';
import { ConfigError, unsetVariables, YamlSource } from '../config/yaml-source.js';
import type { OpsListenError } from '../ops/operations.js';
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
/** A setting status and reload need whose value names a variable this shell does not have. */
export interface UnsetSetting {
  /** `state_dir` or `ops.listen`. */
  key: string;
  /** As written in bots.yaml, `${...}` and all. */
  written: string;
  names: string[];
  /** file:line:col of the value. */
  where: string;
}

export interface OpsSettings {
  stateDir: string;
  listen?: string;
  token?: string;
  /** state_dir, then ops.listen, when its value came out wrong for want of a variable. */
  unset?: UnsetSetting;
}

export async function readOpsSettings(file: string): Promise<OpsSettings> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}): give the bots.yaml groupwire run runs`);
  }
  let raw: { state_dir?: unknown; ops?: unknown } = {};
  let unset: UnsetSetting | undefined;
  try {
    const source = YamlSource.parse(text, file);
    // What state_dir and ops.listen are written as, to say which variable they lack (not a broken path or address).
    for (const path of [['state_dir'], ['ops', 'listen']]) {
      const written = source.writtenAt(path);
      const names = written === undefined ? [] : unsetVariables(written, process.env);
      if (written !== undefined && names.length > 0) {
        unset ??= { key: path.join('.'), written, names, where: source.where(path) };
      }
    }
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
  if (raw.ops === false) return { stateDir, ...(unset?.key === 'state_dir' ? { unset } : {}) };
  const ops = (typeof raw.ops === 'object' && raw.ops !== null ? raw.ops : {}) as { listen?: unknown; token?: unknown };
  return {
    stateDir,
    ...(unset ? { unset } : {}),
    listen: typeof ops.listen === 'string' ? ops.listen : DEFAULT_OPS_LISTEN,
    token: typeof ops.token === 'string' ? nonEmpty(ops.token) : undefined,
  };
}

/** "state_dir of bots.yaml (bots.yaml:3:12) is "${STATE}/gw", and STATE is not set here" */
export function describeUnset(setting: UnsetSetting, file: string): string {
  const names = setting.names;
  const which = names.length === 1 ? `${names[0]} is` : `${names.slice(0, -1).join(', ')} and ${names.at(-1)} are`;
  return `${setting.key} of ${file} (${setting.where}) is "${setting.written}", and ${which} not set here`;
}

/** ops.json of a process; `alive` false when the process it names is gone (a stale file). */
export function readOpsFile(file: string): { pid: number; url?: string; alive: boolean; listenError?: OpsListenError } | undefined {
  let parsed: { pid?: unknown; url?: unknown; listen_error?: unknown };
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
  const failed = parsed.listen_error as Partial<OpsListenError> | undefined;
  const listenError = typeof failed === 'object' && failed !== null && typeof failed.listen === 'string' && typeof failed.code === 'string'
    ? { listen: failed.listen, code: failed.code, retry_seconds: Number(failed.retry_seconds) || 0, ...(typeof failed.holder === 'string' ? { holder: failed.holder } : {}) }
    : undefined;
  return { pid: parsed.pid, alive, ...(typeof parsed.url === 'string' ? { url: parsed.url } : {}), ...(listenError ? { listenError } : {}) };
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
