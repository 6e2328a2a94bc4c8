import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { FileIntake } from '../src/gateway/file-intake.js';
import { MediaRetention } from '../src/media/media-retention.js';
import { MediaStore } from '../src/media/media-store.js';
import { MessageMap } from '../src/store/message-map.js';

/** The media store's pieces on their own: the map keeps a line's files, retention removes old files, the intake's checks. */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-media-'));
  dirs.push(dir);
  return dir;
};
const silent = pino({ level: 'silent' });
const line = (key: string) => ({
  key, gateway: 'g', origin: 'memory:#a@bot/a', platform: 'memory', nativeId: key, kind: 'message',
  speaker: { platform: 'memory', id: 'u', name: 'uma' }, text: `text of ${key}`,
});

describe('the message map keeps files', () => {
  it('a record keeps its files and refused files across a restart, only when it has some; a record from before files loads as none', () => {
    const file = join(tempDir(), 'gateway-map.jsonl');
    // A map written before files existed.
    writeFileSync(file, `${JSON.stringify({ r: { ...line('old'), at: Date.now(), copies: {} } })}\n`);
    const map = MessageMap.open(file);
    const files = [{ id: 'a'.repeat(32), name: 'cat.png', contentType: 'image/png', size: 10, image: true, url: 'http://m.example/aaa/cat.png' }];
    map.begin({ ...line('new'), files, refusedFiles: [{ name: 'x.exe', reason: 'type not allowed (.exe)' }] });
    map.begin({ ...line('plain'), files: [], refusedFiles: [] });
    const again = MessageMap.open(file);
    expect(again.get('old')!.files).toBeUndefined();
    expect(again.get('new')).toMatchObject({ files, refusedFiles: [{ name: 'x.exe', reason: 'type not allowed (.exe)' }] });
    expect('files' in again.get('plain')! || 'refusedFiles' in again.get('plain')!).toBe(false);
    expect(readFileSync(file, 'utf8').split('\n').filter((l) => l.includes('"plain"'))[0]).not.toContain('files');
  });
});

describe('media retention', () => {
  it('removes files past retention_days with their meta, .part leftovers and meta without a file after an hour, and nothing else', async () => {
    const dir = tempDir();
    const store = new MediaStore(dir);
    const old = await store.put(Readable.from([Buffer.from('old')]), { name: 'old.txt', contentType: 'text/plain', image: false });
    const fresh = await store.put(Readable.from([Buffer.from('fresh')]), { name: 'fresh.txt', contentType: 'text/plain', image: false });
    const id = (n: number) => n.toString(16).padStart(32, '0');
    writeFileSync(join(dir, `${id(1)}.part`), 'cut short');
    writeFileSync(join(dir, `${id(2)}.part`), 'under way');
    writeFileSync(join(dir, `${id(3)}.json`), '{}');
    writeFileSync(join(dir, 'README'), 'not ours');
    const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000);
    for (const name of [old.id, `${old.id}.json`, 'README']) utimesSync(join(dir, name), daysAgo(31), daysAgo(31));
    utimesSync(join(dir, `${id(1)}.part`), daysAgo(0.1), daysAgo(0.1));
    utimesSync(join(dir, `${id(3)}.json`), daysAgo(0.1), daysAgo(0.1));
    const retention = new MediaRetention(dir, 30 * 24 * 3600 * 1000, silent);
    expect(await retention.sweep()).toBe(1);
    expect(await store.stat(old.id)).toBeUndefined();
    await expect(store.open(old.id)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await store.stat(fresh.id))?.name).toBe('fresh.txt');
    expect([existsSync(join(dir, `${id(1)}.part`)), existsSync(join(dir, `${id(2)}.part`)), existsSync(join(dir, `${id(3)}.json`)), existsSync(join(dir, 'README'))])
      .toEqual([false, true, false, true]);
  });
});

describe('the file intake', () => {
  const limits = { maxSize: 1000, denyTypes: ['.exe', 'application/x-dosexec'], stallMs: 5_000 };
  const file = (name: string, bytes: Buffer, contentType?: string) => ({ name, ...(contentType ? { contentType } : {}), size: bytes.length, open: async () => Readable.from([bytes]) });

  it('an image is kept with the type its bytes show; SVG is a file, never an image; a hostile name is made safe', async () => {
    const store = new MediaStore(tempDir(), 'https://media.example/');
    const intake = new FileIntake(store, limits, silent);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1]);
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    const { files, refused } = await intake.read([
      file('photo.png', jpeg, 'image/png'), file('logo.svg', svg, 'image/svg+xml'), file('../../etc/pass\u0000wd', Buffer.from('x'), 'Text/Plain; charset=utf-8'),
    ]);
    expect(refused).toEqual([]);
    expect(files.map((f) => [f.name, f.contentType, f.image])).toEqual([['photo.png', 'image/jpeg', true], ['logo.svg', 'image/svg+xml', false], ['.._.._etc_pass_wd', 'text/plain', false]]);
    expect(files[0]!.url).toBe(`https://media.example/${files[0]!.id}/photo.png`);
    expect(files[2]!.url).toBe(`https://media.example/${files[2]!.id}/.._.._etc_pass_wd`);
  });

  it('a file whose open() fails is refused ("could not be read") and the others of the line are kept', async () => {
    const intake = new FileIntake(new MediaStore(tempDir()), limits, silent);
    const { files, refused } = await intake.read([
      { name: 'gone.txt', open: async () => { throw new Error('404 from the platform'); } },
      file('ok.txt', Buffer.from('ok'), 'text/plain'),
    ]);
    expect(refused).toEqual([{ name: 'gone.txt', reason: 'could not be read' }]);
    expect(files.map((f) => f.name)).toEqual(['ok.txt']);
    expect(intake.counts.refused.get('read_failed')).toBe(1);
  });

  it('takes the shapes platforms give: a web stream (fetch\'s body), an async iterable; a stalled web stream is let go', async () => {
    const intake = new FileIntake(new MediaStore(tempDir()), { ...limits, stallMs: 200 }, silent);
    const web = new Response(Buffer.from('from fetch')).body!;
    async function* chunks() {
      yield new TextEncoder().encode('one ');
      yield new TextEncoder().encode('two');
    }
    let pulls = 0;
    const stuck = new ReadableStream<Uint8Array>({ pull: () => { pulls += 1; return new Promise(() => undefined); } });
    const { files, refused } = await intake.read([
      { name: 'web.txt', contentType: 'text/plain', open: async () => web },
      { name: 'iter.txt', contentType: 'text/plain', open: async () => chunks() },
      { name: 'stuck.txt', open: async () => stuck },
    ]);
    expect(files.map((f) => [f.name, f.size])).toEqual([['web.txt', 10], ['iter.txt', 7]]);
    expect(refused).toEqual([{ name: 'stuck.txt', reason: 'download stalled (no bytes for 0.2 s)' }]);
    expect(pulls).toBeGreaterThan(0);
  });

  it('the files of one line are read together: a second stalled file is opened before the first is given up, and each is refused', async () => {
    const intake = new FileIntake(new MediaStore(tempDir()), { ...limits, stallMs: 200 }, silent);
    const events: string[] = [];
    const stalled = (name: string) => ({ name, open: async (signal: AbortSignal) => {
      events.push(`open ${name}`);
      signal.addEventListener('abort', () => events.push(`abort ${name}`));
      return new Readable({ read() {} });
    } });
    const { refused } = await intake.read([stalled('a.bin'), stalled('b.bin')]);
    expect(refused.map((f) => f.name)).toEqual(['a.bin', 'b.bin']);
    expect(events.slice(0, 2)).toEqual(['open a.bin', 'open b.bin']);
  });
});
