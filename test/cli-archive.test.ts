import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yauzl from 'yauzl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFor, outputs, PASSWORDS, runCli, succeeded } from './helpers/cli.js';
import { admin, call, loginAs, ok, startTestService, type TestService } from './helpers/service.js';

let svc: TestService;
let dir: string;

beforeAll(async () => {
  svc = await startTestService();
  dir = await mkdtemp(join(tmpdir(), 'gw-cli-archive-'));
  // Body lines that mboxrd quotes: "From " gets one ">", ">From " another.
  ok(await admin(svc, 'topics', {
    group: 'demo', user: 'bob@example.com', subject: 'Quoting', body: 'Line one\nFrom the start\n>From quoted\nend',
  }));
});
afterAll(async () => {
  await svc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The bytes of one file inside a zip. */
function zipEntry(zipFile: string, name: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    yauzl.open(zipFile, { lazyEntries: true }, (error, zip) => {
      if (error || !zip) return reject(error);
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName !== name) return zip.readEntry();
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError);
          const chunks: Buffer[] = [];
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('end', () => resolve(Buffer.concat(chunks)));
        });
      });
      zip.on('end', () => reject(new Error(`no ${name}`)));
      zip.readEntry();
    });
  });
}

const fromLines = (mbox: string) => mbox.split('\n').filter((line) => line.startsWith('From ')).length;
const msgNums = (mbox: string) => [...mbox.matchAll(/^X-Msg-Num: (\d+)$/gm)].map(([, n]) => Number(n));

describe('groupwire archive download', () => {
  it('writes the mbox of the archive as the service sent it', async () => {
    const out = join(dir, 'mo.mbox');
    const zip = join(dir, 'mo.zip');
    const result = await runCli(['archive', 'download', '--group', 'demo', '--out', out, '--keep-zip', zip], envFor(svc, 'mo'));
    succeeded(result);
    const mbox = await readFile(out);
    expect(mbox.equals(await zipEntry(zip, 'messages.mbox'))).toBe(true);
    const text = mbox.toString('utf8');
    expect(text).toContain('\n>From the start\n>>From quoted\n');
    const { total_count: total } = ok(await call(svc, 'getmessages', { group_name: 'demo' }, { auth: await loginAs(svc, 'mo') }));
    expect(fromLines(text)).toBe(total);
    expect(result.stdout).toContain(`wrote ${out}: ${total} messages`);
    // stderr is no terminal here: no progress line, nothing at all.
    expect(result.stderr).toBe('');
    expect(existsSync(`${out}.part`)).toBe(false);
  });

  it('--since-msg keeps later messages only; a second download in 24 hours exits 1 saying when', async () => {
    const out = join(dir, 'bob.mbox');
    succeeded(await runCli(['archive', 'download', '--group', 'demo', '--since-msg', '3', '--out', out], envFor(svc, 'bob')));
    const text = await readFile(out, 'utf8');
    const nums = msgNums(text);
    const { total_count: total } = ok(await call(svc, 'getmessages', { group_name: 'demo' }, { auth: await loginAs(svc, 'bob') }));
    expect(nums).toEqual(Array.from({ length: total - 3 }, (_, i) => i + 4));
    expect(fromLines(text)).toBe(total - 3);

    const again = await runCli(['archive', 'download', '--group', 'demo', '--out', join(dir, 'again.mbox')], envFor(svc, 'bob'));
    expect(again.code).toBe(1);
    // The time is said once, in words, with the raw type after it.
    expect(again.stderr).toMatch(/^groupwire: the archive may be downloaded once per 24 hours; the next download is allowed at \S+ \(rate_limit\)\n$/);
    expect(again.stderr.match(/allowed at/g)).toHaveLength(1);
    const at = /the next download is allowed at (\S+)/.exec(again.stderr)?.[1];
    expect(Date.parse(at!)).toBeGreaterThan(Date.now() + 23 * 3600_000);
    expect(existsSync(join(dir, 'again.mbox'))).toBe(false);
  });

  it('--since takes an ISO date-time; the mbox goes to NAME.mbox in the working directory by default', async () => {
    const cwd = await mkdtemp(join(dir, 'cwd-'));
    const result = await runCli(['archive', 'download', '--group', 'demo', '--since', '2999-01-01T00:00:00+02:00'], envFor(svc, 'carol'), cwd);
    expect(succeeded(result)).toContain('wrote demo.mbox: 0 messages');
    expect(await readFile(join(cwd, 'demo.mbox'), 'utf8')).toBe('');
  });

  it('exits 2 on a bad --since, --since-msg, both, or no --group', async () => {
    const env = envFor(svc, 'alice');
    const cases = [['--since', 'yesterday'], ['--since-msg', '-1'], ['--since-msg', '2', '--since', '2024-01-01T00:00:00Z'], []];
    const results = await Promise.all(cases.map((args) => runCli(['archive', 'download', ...(args.length ? ['--group', 'demo'] : []), ...args], env)));
    for (const result of results) {
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("Run 'groupwire archive download --help'");
    }
  });
});

describe('groupwire archive search', () => {
  it('prints number, date, author, subject and summary of each result', async () => {
    const out = succeeded(await runCli(['archive', 'search', '--group', 'demo', 'approve'], envFor(svc, 'bob')));
    expect(out).toMatch(/^#5 {2}\d{4}-\d\d-\d\d \d\d:\d\d {2}Demo Bot {2}Re: How do I write a bot\? #help #bots\n {4}I am a bot and I approve this message\.\n/);
  });

  it('joins the words of the query, shows a footer when there is more, and says when nothing matched', async () => {
    const two = succeeded(await runCli(['archive', 'search', '--group', 'demo', 'bot', '--limit', '1'], envFor(svc, 'bob')));
    expect(two.split('\n').filter((line) => line.startsWith('#'))).toHaveLength(1);
    expect(two).toMatch(/\(1 of \d+ results; --limit takes up to 100\)\n$/);
    const phrase = succeeded(await runCli(['archive', 'search', '--group', 'demo', 'approve', 'this'], envFor(svc, 'bob')));
    expect(phrase).toContain('#5');
    const none = succeeded(await runCli(['archive', 'search', '--group', 'demo', 'zzzyxnothing'], envFor(svc, 'bob')));
    expect(none).toBe('No results.\n');
  });

  it('--json prints the service\'s list', async () => {
    const out = succeeded(await runCli(['archive', 'search', '--group', 'demo', 'bot', '--json'], envFor(svc, 'bob')));
    const list = JSON.parse(out);
    expect(list).toMatchObject({ object: 'list', query: 'bot' });
    expect(list.data[0]).toHaveProperty('summary');
  });

  it('exits 2 without a query, 1 for a group the caller cannot read', async () => {
    const noQuery = await runCli(['archive', 'search', '--group', 'demo'], envFor(svc, 'bob'));
    expect(noQuery.code).toBe(2);
    expect(noQuery.stderr).toContain("Run 'groupwire archive search --help'");
    const banned = await runCli(['archive', 'search', '--group', 'demo', 'bot'], envFor(svc, 'dave'));
    expect(banned.code).toBe(1);
    expect(banned.stderr).toMatch(/^groupwire: you may not read the archives of this group \(inadequate_permissions: /);
  });
});

describe('secrets', () => {
  it('no password appeared in any output of this file', () => {
    for (const password of PASSWORDS) expect(outputs.join('\n')).not.toContain(password);
  });
});
