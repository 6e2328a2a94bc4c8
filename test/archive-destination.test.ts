import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readArchive } from '../src/api/index.js';
import { envFor, ROOT, runCli, succeeded, type CliResult } from './helpers/cli.js';
import { Clients, recordSends } from './helpers/client.js';
import { admin, ok, send, startTestService, type TestService } from './helpers/service.js';

/**
 * #15 item 11: `groupwire archive download` (and the client's downloadArchives) check where the files
 * go before asking for the download, which the service allows once a day; a folder as `--out` gets the
 * default name inside; a write that fails half-way keeps what was received and says where.
 */

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** Files over this many KiB cannot be written by the CLI run under it (RLIMIT_FSIZE: EFBIG). */
const FILE_LIMIT_KIB = 128;

/** The CLI with a file size limit, so a write fails half-way as on a full disk. */
function runCliWithFileLimit(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', `ulimit -f ${FILE_LIMIT_KIB} && exec "$0" "$@"`, process.execPath, '--import', TSX, `${ROOT}src/cli/main.ts`, ...args], {
      cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}

let svc: TestService;
let dir: string;
const clients = new Clients(() => svc);

const downloadsAsked = async (): Promise<number> =>
  (await send(svc, '/_admin/stats', 'GET', { authorization: `Bearer ${svc.service.adminToken}` })).body.api_calls.downloadarchives ?? 0;

/** A path named in a message: the first absolute path ending in the given suffix. */
const pathIn = (text: string, suffix: string): string => new RegExp(`(/[^\\s:;()]+${suffix.replace('.', '\\.')})`).exec(text)![1]!;

beforeAll(async () => {
  svc = await startTestService();
  dir = await mkdtemp(join(tmpdir(), 'groupwire-archive-destination-'));
  const member = (email: string) => ({ email, role: 'member' as const });
  const group = (name: string, body: string) => ({
    name, members: [{ email: 'mo@example.com', role: 'owner' as const }, member('bob@example.com')],
    topics: [{ subject: `${name} topic`, messages: [{ from: 'mo@example.com', body }] }],
  });
  // Over the limit as a zip (random text does not compress) and as an mbox.
  ok(await admin(svc, 'groups', group('noisy', randomBytes(300 * 1024).toString('base64'))));
  // Under the limit as a zip, over it as an mbox.
  ok(await admin(svc, 'groups', group('plain', 'the same line again\n'.repeat(15_000))));
});
afterAll(async () => {
  await clients.closeAll();
  await svc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});
// Each test may spend the day's download: each starts on a new day.
beforeEach(async () => {
  ok(await admin(svc, 'clock/advance', { seconds: 86_400 }));
});

describe('archive download: the destination is checked before the request', () => {
  it('refuses an --out in a missing folder without asking, and the next correct call is not refused', async () => {
    const before = await downloadsAsked();
    const missing = await runCli(['archive', 'download', '--group', 'demo', '--out', join(dir, 'no-such-folder', 'demo.mbox')], envFor(svc, 'mo'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`the folder ${join(dir, 'no-such-folder')} does not exist`);
    expect(missing.stderr).toContain('nothing was downloaded');
    expect(await downloadsAsked()).toBe(before);

    const out = join(dir, 'after-mistake.mbox');
    succeeded(await runCli(['archive', 'download', '--group', 'demo', '--out', out], envFor(svc, 'mo')));
    expect((await readFile(out, 'utf8')).startsWith('From ')).toBe(true);
  });

  it('refuses a missing folder written with a slash, a missing --keep-zip folder and a device, asking nothing', async () => {
    const before = await downloadsAsked();
    const cases = [
      ['--out', join(dir, 'not-there') + '/'],
      ['--out', join(dir, 'fine.mbox'), '--keep-zip', join(dir, 'nowhere', 'demo.zip')],
      ['--out', '/dev/null'],
    ];
    for (const flags of cases) {
      const result = await runCli(['archive', 'download', '--group', 'demo', ...flags], envFor(svc, 'mo'));
      expect(result.code, flags.join(' ')).toBe(1);
      expect(result.stderr).toContain('nothing was downloaded');
    }
    expect(await downloadsAsked()).toBe(before);
    expect(existsSync(join(dir, 'fine.mbox'))).toBe(false);
  });

  it('writes NAME.mbox inside an --out that is a folder, with or without the slash', async () => {
    const folder = join(dir, 'into');
    await mkdir(folder);
    succeeded(await runCli(['archive', 'download', '--group', 'demo', '--out', `${folder}/`], envFor(svc, 'mo')));
    expect((await readFile(join(folder, 'demo.mbox'), 'utf8')).startsWith('From ')).toBe(true);
    succeeded(await runCli(['archive', 'download', '--group', 'demo', '--out', folder], envFor(svc, 'bob')));
    // Nothing else left beside it: the temporary zip went away.
    expect((await readdir(folder)).sort()).toEqual(['demo.mbox']);
  });
});

describe('archive download: a write that fails half-way keeps what was received', () => {
  it('the zip cannot be written whole: its received part is kept and named', async () => {
    const folder = join(dir, 'zip-fails');
    await mkdir(folder);
    const result = await runCliWithFileLimit(['archive', 'download', '--group', 'noisy', '--out', join(folder, 'noisy.mbox')], envFor(svc, 'mo'));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('the bytes received are kept in');
    const partial = pathIn(result.stderr, '.part');
    // What reached the disk, as many bytes as the message says.
    const { size } = await stat(partial);
    expect(size).toBeGreaterThan(0);
    expect(size).toBeLessThanOrEqual(FILE_LIMIT_KIB * 1024);
    expect(result.stderr).toContain(`stopped after ${size} bytes`);
    expect(partial.startsWith(folder)).toBe(true);
  });

  it('the mbox cannot be written whole: the downloaded zip is kept whole and named', async () => {
    const folder = join(dir, 'mbox-fails');
    await mkdir(folder);
    const result = await runCliWithFileLimit(['archive', 'download', '--group', 'plain', '--out', join(folder, 'plain.mbox')], envFor(svc, 'mo'));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('the downloaded archive is kept whole in');
    const zip = pathIn(result.stderr, '.zip');
    const bodies = [];
    for await (const message of readArchive(zip)) bodies.push(message.body);
    expect(bodies).toEqual(['the same line again\n'.repeat(15_000)]);
  });
});

describe('client downloadArchives: the same checks', () => {
  it('rejects a missing folder before sending anything; a folder gets <group>.zip', async () => {
    const client = clients.make('carol');
    const sent = recordSends(client);
    const error = await client.downloadArchives({ group_name: 'demo' }, { out: join(dir, 'gone', 'demo.zip') }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ArchiveDestinationError' });
    expect(sent.filter((operation) => operation === 'downloadarchives')).toEqual([]);

    const folder = join(dir, 'client-folder');
    await mkdir(folder);
    const result = await client.downloadArchives({ group_name: 'demo' }, { out: folder });
    expect(result.file).toBe(join(folder, 'demo.zip'));
    expect((await stat(result.file)).size).toBe(result.bytes);
  });
});
