import { access, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanEnv } from './helpers/cli.js';
import { startCli, type RunningCli } from './helpers/long-running-cli.js';

/**
 * `groupwire serve` without --state keeps its key in memory and writes only the CA certificate, to a
 * temporary folder that must not outlive the process, whether it stops cleanly (Ctrl-C) or at once
 * (a second Ctrl-C).
 */

const running: RunningCli[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((cli) => cli.stop('SIGKILL')));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function serveAndStop(signals: number): Promise<{ code: number | null; caFile: string }> {
  // Its own working directory: serve writes .groupwire/demo.json there for the client commands.
  const cwd = await mkdtemp(join(tmpdir(), 'groupwire-keys-test-'));
  dirs.push(cwd);
  const serve = startCli(['serve', '--port', '0', '--log-level', 'warn'], cleanEnv(), cwd);
  running.push(serve);
  const [line] = await serve.waitFor('stdout', /^\{.*\}\n/);
  const caFile = (JSON.parse(line) as { ca_file: string }).ca_file;
  // Only the CA certificate clients trust is on disk; the private key stays in the process.
  expect(await readdir(dirname(caFile))).toEqual(['ca.pem']);
  // The demo file is written just before serve waits for signals: from then on Ctrl-C is handled.
  await waitUntil(() => exists(join(cwd, '.groupwire', 'demo.json')));
  for (let i = 0; i < signals; i += 1) serve.child.kill('SIGINT');
  const { code } = await serve.exited();
  return { code, caFile };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
}

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the local service\'s temporary TLS files', () => {
  test('are removed when serve stops, cleanly or at once', { timeout: 60_000 }, async () => {
    const clean = await serveAndStop(1);
    expect(clean.code).toBe(0);
    expect(dirname(clean.caFile)).toMatch(/\/groupwire-\d+-[0-9a-f]{8}$/);
    expect(await exists(dirname(clean.caFile))).toBe(false);

    // The second Ctrl-C exits before close() is done: the exit hook removes them.
    const hurried = await serveAndStop(2);
    expect([0, 130]).toContain(hurried.code);
    expect(await exists(dirname(hurried.caFile))).toBe(false);
  });
});
