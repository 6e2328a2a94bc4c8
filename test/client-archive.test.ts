import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveDownloadLimitError, formatStartTime, readArchive, readMbox, type Message } from '../src/api/index.js';
import type { Seed } from '../src/service/seed.js';
import { captureLog, Clients, recordSends, serviceNow } from './helpers/client.js';
import { admin, startTestService, type TestService } from './helpers/service.js';

/** The garbage collector, made callable without --expose-gc, so heap samples count only what is retained. */
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

const TOPICS = 40;
const PER_TOPIC = 100;
const TOTAL = TOPICS * PER_TOPIC;
const READERS = ['r1', 'r2', 'r3', 'r4'].map((name) => `${name}@example.com`);

/** About 5 KB of incompressible text with mbox traps: From lines, quoted From lines, blank lines. */
function body(n: number): string {
  const noise = randomBytes(3600).toString('base64').match(/.{1,76}/g)!;
  return [
    `Message ${n}`, 'From the top: this line starts like an mbox separator.', '', ...noise.slice(0, 30),
    '>From a quoted line', '>>From a doubly quoted line', 'From ', ' From not at the start', '', ...noise.slice(30), 'From the end',
  ].join('\n');
}

describe('archive download and reading', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  let dir: string;
  const bodies: string[] = [];
  beforeAll(async () => {
    for (let n = 1; n <= TOTAL; n += 1) bodies.push(body(n));
    const seed: Seed = {
      users: READERS.map((email) => ({ email, password: 'pw', full_name: email.split('@')[0]! })),
      groups: [{
        name: 'big',
        members: READERS.map((email, index) => ({ email, role: index === 0 ? 'owner' as const : 'member' as const })),
        topics: Array.from({ length: TOPICS }, (_, t) => ({
          subject: `Topic ${t + 1}`,
          messages: Array.from({ length: PER_TOPIC }, (_, m) => ({ from: READERS[m % READERS.length]!, body: bodies[t * PER_TOPIC + m]! })),
        })),
      }],
    };
    svc = await startTestService({ seed });
    dir = await mkdtemp(join(tmpdir(), 'groupwire-client-archive-'));
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
    await rm(dir, { recursive: true, force: true });
  });

  const reader = (index: number, log = captureLog()) => clients.make({ email: READERS[index]!, password: 'pw' }, { logger: log.logger });

  let firstDownloadWindow: [Date, Date];

  it(`streams ${TOTAL} messages to disk and reads them back in order with flat memory`, async () => {
    const client = reader(0);
    const out = join(dir, 'big.zip');
    const progress: Array<[number, number | undefined]> = [];
    const before = await serviceNow(svc);
    const result = await client.downloadArchives({ group_name: 'big' }, { out, onProgress: (bytes, total) => progress.push([bytes, total]) });
    firstDownloadWindow = [before, await serviceNow(svc)];
    expect(result.bytes).toBe((await stat(out)).size);
    expect(existsSync(`${out}.part`)).toBe(false);
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toEqual([result.bytes, undefined]);
    expect(progress.every(([bytes], index) => index === 0 || bytes > progress[index - 1]![0])).toBe(true);

    const mboxBytes = bodies.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
    expect(mboxBytes).toBeGreaterThan(20_000_000);
    const gc = exposeGc();
    gc();
    const baseline = process.memoryUsage().heapUsed;
    let peak = baseline;
    let count = 0;
    const mismatched: number[] = [];
    for await (const message of readArchive(out)) {
      count += 1;
      if (message.body !== bodies[count - 1] || message.headers['x-msg-num'] !== String(count)) mismatched.push(count);
      if (count % 500 === 0) {
        gc();
        peak = Math.max(peak, process.memoryUsage().heapUsed);
      }
    }
    expect(count).toBe(TOTAL);
    expect(mismatched).toEqual([]);
    // What stays reachable while iterating: a message at a time, never the file (a whole-file reader keeps > 20 MB).
    expect(peak - baseline).toBeLessThan(mboxBytes * 0.1);
  });

  it('the 24-hour rule is ArchiveDownloadLimitError with nextAllowedAt, not retried; a day later it works', async () => {
    const log = captureLog();
    const client = reader(0, log);
    const sent = recordSends(client);
    const out = join(dir, 'again.zip');
    const error = await client.downloadArchives({ group_name: 'big' }, { out }).catch((e) => e);
    expect(error).toBeInstanceOf(ArchiveDownloadLimitError);
    expect(error).toMatchObject({ type: 'rate_limit', status: 429, operation: 'downloadarchives' });
    const [from, to] = firstDownloadWindow.map((date) => date.getTime() + 86_400_000);
    expect(error.nextAllowedAt.getTime()).toBeGreaterThanOrEqual(from! - 1000);
    expect(error.nextAllowedAt.getTime()).toBeLessThanOrEqual(to! + 1000);
    expect(error.retryAfterSeconds).toBeGreaterThan(86_000);
    expect(sent.filter((operation) => operation === 'downloadarchives')).toHaveLength(1);
    expect(log.retries()).toEqual([]);
    expect(existsSync(out) || existsSync(`${out}.part`)).toBe(false);

    await admin(svc, 'clock/advance', { seconds: 86_400 });
    await client.downloadArchives({ group_name: 'big', start_msg_num: TOTAL - 5 }, { out });
    const read = [];
    for await (const message of readArchive(out)) read.push(message.headers['x-msg-num']);
    expect(read).toEqual(Array.from({ length: 5 }, (_, index) => String(TOTAL - 4 + index)));
  });

  it('start_time (a Date) passes through: only later messages', async () => {
    const client = reader(1);
    const latest = await client.getMessages({ group_name: 'big', sort_field: 'msg_num', sort_dir: 'desc', limit: 11 });
    const created = (message: Message) => new Date(message.created).getTime();
    const [tenth, eleventh] = [latest.data[9]!, latest.data[10]!];
    const between = new Date((created(tenth) + created(eleventh)) / 2);
    const out = join(dir, 'recent.zip');
    await client.downloadArchives({ group_name: 'big', start_time: between }, { out });
    const nums = [];
    for await (const message of readArchive(out)) nums.push(Number(message.headers['x-msg-num']));
    expect(nums).toEqual(latest.data.slice(0, 10).map((message) => message.msg_num).reverse());
  });

  // Only the 24-hour rule is final; a burst limit or a proxy's 429 is retried like any other.
  it('an ordinary 429 on downloadarchives is retried like any rate limit', async () => {
    const client = reader(2);
    await client.login();
    await admin(svc, 'faults/errors', { count: 1, type: 'rate_limit', retry_after: 1, operations: ['downloadarchives'] });
    const result = await client.downloadArchives({ group_name: 'big', start_msg_num: TOTAL - 1 }, { out: join(dir, 'burst.zip') });
    expect(result.bytes).toBeGreaterThan(0);
  });
});

describe('formatStartTime and readMbox', () => {
  it('formats a Date as YYYY-MM-DDThh:mm:ssZ and passes strings through', () => {
    expect(formatStartTime(new Date('2026-03-04T05:06:07.890Z'))).toBe('2026-03-04T05:06:07Z');
    expect(formatStartTime('2026-03-04T05:06:07Z')).toBe('2026-03-04T05:06:07Z');
  });

  it('splits messages at From lines, folds headers and unquotes one > of From lines', async () => {
    const mbox = [
      'From a@example.com Sat Nov 21 19:18:29 2026', 'Subject: one', ' continued', 'X-Msg-Num: 1', '',
      '>From inside', '>>From twice', '> From not quoted', '', '',
      'From b@example.com Sat Nov 21 19:18:30 2026', 'Subject: two', '', '', '',
    ].join('\n');
    const messages = [];
    for await (const message of readMbox(Readable.from([mbox]))) messages.push(message);
    expect(messages).toEqual([
      {
        envelope: 'a@example.com Sat Nov 21 19:18:29 2026', headers: { subject: 'one continued', 'x-msg-num': '1' },
        body: 'From inside\n>From twice\n> From not quoted\n',
      },
      { envelope: 'b@example.com Sat Nov 21 19:18:30 2026', headers: { subject: 'two' }, body: '' },
    ]);
  });
});
