import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StateFile } from '../src/service/state-file.js';
import type { StoreData } from '../src/service/store.js';
import { call, login, ok, startTestService, type Session, type TestService } from './helpers/service.js';

/**
 * #15 item 12: with `--state FILE`, what the service answered as done is on disk before the answer
 * leaves, so a `kill -9` right after the answer loses nothing. Saves are shared by the answers that
 * wait together, so a burst of changes costs a few saves, not one each.
 */

interface Served {
  child: ChildProcess;
  svc: TestService;
  exited: Promise<unknown>;
}

/** `groupwire serve --state FILE` as a child process, as a user runs it. */
async function serve(statePath: string): Promise<Served> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--state', statePath, '--rate-limit', 'off'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  const ready = JSON.parse(line) as { base_url: string; ca_file: string };
  const dispatcher = new Agent({ connect: { ca: await readFile(ready.ca_file, 'utf8') } });
  // The helpers only need the address and the connection pool of a service.
  const svc = { baseUrl: ready.base_url, dispatcher, service: undefined as never, close: async () => dispatcher.close() };
  return { child, svc, exited };
}

async function killHard(served: Served): Promise<void> {
  served.child.kill('SIGKILL');
  await served.exited;
  await served.svc.close();
}

const subjectsOf = async (svc: TestService, auth: Session): Promise<string[]> =>
  ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth })).data.map((chat: { subject: string }) => chat.subject);

describe('the state file under kill -9', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'groupwire-state-durable-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('keeps every change answered before the kill, and the session that made it', async () => {
    const statePath = join(dir, 'state.json');
    const first = await serve(statePath);
    let mo: Session;
    try {
      mo = await login(first.svc, 'mo@example.com', 'mo-demo');
      ok(await call(first.svc, 'newchat', { group_name: 'demo', subject: 'answered then killed', desc: '' }, { method: 'POST', auth: mo }));
    } finally {
      // At once after the answer: no timer or exit handler gets a chance to save.
      await killHard(first);
    }
    const second = await serve(statePath);
    try {
      // The login was answered too, so its cookie still works.
      expect(await subjectsOf(second.svc, mo)).toContain('answered then killed');
    } finally {
      await killHard(second);
    }
  });
});

describe('saves shared by waiting answers', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'groupwire-state-shared-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  /** A state file over a counter standing for the store: each change moves the key. */
  function counted(path: string) {
    let version = 0;
    const data = () => ({ version }) as unknown as StoreData;
    const file = new StateFile(path, { key: () => String(version), data }, pino({ level: 'silent' }));
    return { file, change: () => (version += 1), saved: async () => JSON.parse(await readFile(path, 'utf8')).version as number };
  }

  it('one save covers every change made before it started', async () => {
    const { file, change, saved } = counted(join(dir, 'shared.json'));
    const waits = Array.from({ length: 100 }, () => {
      change();
      return file.persist();
    });
    await Promise.all(waits);
    expect(file.writes).toBe(1);
    expect(await saved()).toBe(100);

    // While one save runs, later changes all join the single save queued behind it.
    change();
    const running = file.persist();
    // By the next turn of the event loop that save has taken its snapshot (it may still be writing).
    await new Promise((resolve) => setImmediate(resolve));
    const late = Array.from({ length: 50 }, () => {
      change();
      return file.persist();
    });
    await Promise.all([running, ...late]);
    expect(file.writes).toBe(3);
    expect(await saved()).toBe(151);

    // Nothing changed: nothing written.
    await file.persist();
    expect(file.writes).toBe(3);
  });

  it('a change that could not be saved is not answered as done; the next save keeps it', async () => {
    const statePath = join(dir, 'failing.json');
    const svc = await startTestService({ statePath });
    try {
      const mo = await login(svc, 'mo@example.com', 'mo-demo');
      // The temporary file of the next save cannot be made: the save fails as on a full disk.
      const blocker = `${statePath}.${process.pid}.tmp`;
      await mkdir(blocker);
      const refused = await call(svc, 'newchat', { group_name: 'demo', subject: 'not saved yet', desc: '' }, { method: 'POST', auth: mo });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ object: 'error', type: 'server' });
      await rmdir(blocker);
      expect(await subjectsOf(svc, mo)).toContain('not saved yet');
      const onDisk = JSON.parse(await readFile(statePath, 'utf8')) as StoreData;
      expect(onDisk.chats.map((chat) => chat.subject)).toContain('not saved yet');
    } finally {
      await svc.close();
    }
  });
});
