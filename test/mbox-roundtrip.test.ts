import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readArchive, readMbox } from '../src/api/index.js';
import { quoteFromLines } from '../src/service/mbox.js';
import type { Seed } from '../src/service/seed.js';
import { seededRandom } from './helpers/chaos.js';
import { Clients } from './helpers/client.js';
import { startTestService, type TestService } from './helpers/service.js';

/**
 * #15 item 10: a body goes through the service's mbox (inside the zip) and the client's reader and
 * comes back exactly, whatever it holds. mboxrd quotes only at the start of a line, and in an mbox a
 * line ends with `\n` alone: `\r`, U+2028, U+2029 and U+0085 are characters like any other.
 */

/** Pieces chosen to meet at line starts: separators-to-be, every kind of line break, quoting traps. */
const PIECES = [
  'From ', '>From ', '>>From ', '>>>From x', 'From', 'from ', ' From ', '>', '> From ', 'From:',
  '\n', '\n', '\n', '\r\n', '\r', '\u2028', '\u2029', '\u0085', '\n\n', '\r\n\r\n',
  'text', 'é', '😀', '\t', ' ', '<p>', 'a@b.c Sat Nov 21 19:18:29 2026',
];

function generatedBody(seed: number): string {
  const next = seededRandom(seed);
  const length = Math.floor(next() * 40);
  let body = '';
  for (let i = 0; i < length; i += 1) body += PIECES[Math.floor(next() * PIECES.length)]!;
  return body;
}

/** Bodies written by hand for the cases the issue names, then generated ones. */
const NAMED = [
  '', '\n', '\n\n', 'From ', 'From x', 'x\n', 'x\r\n', 'x\r', '\r\nFrom x', '\rFrom x', '\u2028From x',
  'a\u2028From b', 'a\u2029From b', 'a\u0085From b', 'a\r\n>From b\r\n', '>From \n>>From \nFrom \n',
  'no final newline\nFrom the end', 'ends with blank lines\n\n\n', '\n\nFrom after blanks',
];
const GENERATED = Array.from({ length: 400 }, (_, index) => generatedBody(index + 1));
const BODIES = [...NAMED, ...GENERATED];

describe('mboxrd quoting', () => {
  it('quotes From lines only after a line feed (or at the start)', () => {
    expect(quoteFromLines('From a\nFrom b')).toBe('>From a\n>From b');
    expect(quoteFromLines('a\r\nFrom b')).toBe('a\r\n>From b');
    for (const mark of ['\r', '\u2028', '\u2029', '\u0085']) {
      expect(quoteFromLines(`a${mark}From b`)).toBe(`a${mark}From b`);
    }
  });

  it('reads only a line feed as the end of a line', async () => {
    const mbox = 'From a@b.c Sat Nov 21 19:18:29 2026\nSubject: s\n\nx\rFrom y\u2028From z\r\n>From w\n\n';
    const messages = [];
    for await (const message of readMbox(Readable.from([Buffer.from(mbox)]))) messages.push(message);
    expect(messages.map((message) => message.body)).toEqual(['x\rFrom y\u2028From z\r\nFrom w']);
  });
});

describe('archive round trip (service → zip → readArchive)', () => {
  let svc: TestService;
  const clients = new Clients(() => svc);
  let dir: string;
  beforeAll(async () => {
    const seed: Seed = {
      users: [{ email: 'rt@example.com', password: 'pw', full_name: 'Round Trip' }],
      groups: [{
        name: 'roundtrip',
        members: [{ email: 'rt@example.com', role: 'owner' }],
        // One topic per body: each message keeps its own subject, and msg_num order is BODIES order.
        topics: BODIES.map((body, index) => ({ subject: `Body ${index}`, messages: [{ from: 'rt@example.com', body }] })),
      }],
    };
    svc = await startTestService({ seed });
    dir = await mkdtemp(join(tmpdir(), 'groupwire-mbox-roundtrip-'));
  });
  afterAll(async () => {
    await clients.closeAll();
    await svc.close();
    await rm(dir, { recursive: true, force: true });
  });

  it(`gives back ${BODIES.length} bodies exactly as they were stored`, async () => {
    const client = clients.make({ email: 'rt@example.com', password: 'pw' });
    const out = join(dir, 'roundtrip.zip');
    await client.downloadArchives({ group_name: 'roundtrip' }, { out });
    const read: string[] = [];
    for await (const message of readArchive(out)) read.push(message.body);
    expect(read.length).toBe(BODIES.length);
    const differing = BODIES.map((body, index) => ({ index, sent: body, read: read[index] })).filter((pair) => pair.sent !== pair.read);
    expect(differing).toEqual([]);
  });
});
