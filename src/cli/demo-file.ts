import { readFileSync, unlinkSync } from 'node:fs';
import { readFile, rename } from 'node:fs/promises';
import { mkdirPrivate, writeFilePrivate } from '../store/private-files.js';
import { dirname } from 'node:path';
import { DEMO_FILE, processIsAlive } from './service-address.js';

/**
 * `.groupwire/demo.json`, how the client commands of another terminal find a running demo: where the
 * service is and which CA to trust, and the demo's process and state, so a file left by a demo that
 * is gone can be told from a running one.
 */
export interface DemoFile {
  base_url: string;
  ca_file: string | undefined;
  /** The demo's process id. */
  pid: number;
  /** The demo's state_dir, absolute. */
  state_dir: string;
}

export async function readDemoFile(): Promise<DemoFile | undefined> {
  try {
    return JSON.parse(await readFile(DEMO_FILE, 'utf8')) as DemoFile;
  } catch {
    return undefined;
  }
}

/** The other process (a demo or `serve`) whose demo file this is, if it is still running. */
export async function demoFileHolder(): Promise<DemoFile | undefined> {
  const file = await readDemoFile();
  if (!file || typeof file.pid !== 'number' || file.pid === process.pid) return undefined;
  return processIsAlive(file.pid) ? file : undefined;
}

/**
 * Writes the demo file for a process that runs a local service (`serve`, or `run` with an embedded
 * one), so the client commands run from this directory find it without GROUPWIRE_URL; not over the
 * file of another demo or serve that is running (`say` tells why). Removed when this process exits.
 */
export async function announceLocalService(content: Omit<DemoFile, 'pid'>, say: (line: string) => void): Promise<boolean> {
  const other = await demoFileHolder();
  if (other) {
    say(`not writing ${DEMO_FILE}: process ${other.pid} (${other.base_url}) is using it`);
    return false;
  }
  await writeDemoFile({ ...content, pid: process.pid });
  // Also on an exit that skips the caller's own clean-up (an error, a second Ctrl-C).
  process.once('exit', removeOwnDemoFile);
  return true;
}

export async function writeDemoFile(content: DemoFile): Promise<void> {
  await mkdirPrivate(dirname(DEMO_FILE));
  // Written whole and renamed, so a client command never reads half a file.
  const temporary = `${DEMO_FILE}.${process.pid}.tmp`;
  await writeFilePrivate(temporary, `${JSON.stringify(content)}\n`);
  await rename(temporary, DEMO_FILE);
}

/** Removes the demo file if it is this process's (synchronous: it also runs in an exit handler). */
export function removeOwnDemoFile(): void {
  try {
    if ((JSON.parse(readFileSync(DEMO_FILE, 'utf8')) as DemoFile).pid !== process.pid) return;
    unlinkSync(DEMO_FILE);
  } catch {
    // Gone already, or not ours to remove.
  }
}
