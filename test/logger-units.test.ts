import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import type { PluginContext } from '../src/index.js';
import { loggedMessage } from '../plugins/logger/logged-message.js';
import { parseBound } from '../plugins/logger/export.js';
import { FORMATS, type Format } from '../plugins/logger/formats.js';
import { loggerOptions } from '../plugins/logger/options.js';
import { PathPattern, safeSegment } from '../plugins/logger/path-pattern.js';
import { dayOf, formatZoned, zonedToInstant } from '../plugins/logger/time.js';
import { TranscriptFile, type PendingEntry } from '../plugins/logger/transcript-file.js';
import { DiskTrouble } from '../plugins/logger/disk-trouble.js';
import { TranscriptWriter } from '../plugins/logger/writer.js';

/** The logger's parts: formats, time zones, path patterns, options, reading a file's tail, the writer. */

const silent = pino({ level: 'silent' });
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-logger-'));
  dirs.push(dir);
  return dir;
}

function message(msgNum: number, text: string, extra: Partial<ChatMessage> = {}): ChatMessage {
  return {
    object: 'chat_message', id: `9007199254740993${msgNum}`, created: '2026-03-01T23:30:05.123Z', version: 1, user_id: '9007199254740995',
    group_id: '7', chat_id: '12', type: 'chat_msg_type_normal', message: text, msg_num: msgNum, display_name: 'Bob Member',
    user_name: 'bob', profile_photo_url: '', profile_privacy: 'profile_members', email: 'bob@example.com', ...extra,
  };
}

const utc = { timeZone: 'UTC', timeFormat: 'HH:mm:ss' };

/** A message as the writer queues it for a file: rendered in the file's format. */
function pendingOf(format: Format, m: ChatMessage): PendingEntry {
  return { msgNum: m.msg_num, text: format.entry(m, utc) };
}

describe('logger: formats', () => {
  test('jsonl keeps every field as received, ids as their exact digits', () => {
    const line = FORMATS.jsonl.entry(message(3, 'hi'), utc);
    expect(line.endsWith('\n')).toBe(true);
    expect(JSON.parse(line)).toEqual(message(3, 'hi'));
    expect(line).toContain('"id":"90071992547409933"');
    expect(FORMATS.jsonl.msgNumOf!(line.trim())).toBe(3);
    expect(FORMATS.jsonl.msgNumOf!('{"msg_num":')).toBeUndefined();
  });

  test('jsonl names who said a line the bot relayed (relayed_from); the other formats show the line as the chat does', () => {
    const speaker = { platform: 'irc', id: 'alice!~alice@irc.example.net', name: 'alice' };
    const relayedLine = message(6, '<alice> hi from IRC', { display_name: 'Demo Bot', user_name: 'bot' });
    const ctxOf = (own: unknown) => ({ message: relayedLine, own }) as unknown as PluginContext;
    const relayed = loggedMessage(ctxOf({ relayed: { gateway: 'general', endpoint: 'irc:#general@bot/relay-irc', platform: 'irc', nativeId: 'n1', kind: 'message', speaker, text: 'hi from IRC', bus: true, first: true } }));
    expect(JSON.parse(FORMATS.jsonl.entry(relayed, utc))).toEqual({ ...relayedLine, relayed_from: { ...speaker, gateway: 'general' } });
    expect(FORMATS.jsonl.msgNumOf!(FORMATS.jsonl.entry(relayed, utc).trim())).toBe(6);
    expect(FORMATS.text.entry(relayed, utc)).toBe('[23:30:05] <Demo Bot> <alice> hi from IRC\n');
    // The chain's message is not changed; the bot's own voice and members' messages are written as received.
    expect(relayedLine).not.toHaveProperty('relayed_from');
    expect(loggedMessage(ctxOf({}))).toBe(relayedLine);
    expect(loggedMessage(ctxOf(undefined))).toBe(relayedLine);
  });

  test('text: [time] <name> message, in the zone; later lines indented; events marked', () => {
    expect(FORMATS.text.entry(message(1, 'hello'), utc)).toBe('[23:30:05] <Bob Member> hello\n');
    expect(FORMATS.text.entry(message(1, 'hello'), { timeZone: 'Asia/Tokyo', timeFormat: 'YYYY-MM-DD HH:mm Z' }))
      .toBe('[2026-03-02 08:30 +09:00] <Bob Member> hello\n');
    expect(FORMATS.text.entry(message(1, 'one\ntwo\r\nthree'), utc)).toBe('[23:30:05] <Bob Member> one\n    two\n    three\n');
    expect(FORMATS.text.entry(message(1, 'x', { display_name: '', user_name: '' }), utc)).toBe('[23:30:05] <user 9007199254740995> x\n');
    expect(FORMATS.text.entry(message(9, 'This chat has been closed.', { type: 'chat_msg_type_closed' }), utc))
      .toBe('[23:30:05] -- This chat has been closed.\n');
  });

  test('html escapes everything a member typed and links only http(s) addresses', () => {
    const entry = FORMATS.html.entry(message(4, '<script>alert("x")</script> & \'q\'\nsee https://example.com/a?b=1&c=2. or javascript:alert(1)', {
      display_name: '<b>Eve</b>',
    }), utc);
    expect(entry).not.toContain('<script>');
    expect(entry).not.toContain('<b>Eve');
    expect(entry).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;<br>see ');
    expect(entry).toContain('<a href="https://example.com/a?b=1&amp;c=2" rel="nofollow noopener noreferrer">https://example.com/a?b=1&amp;c=2</a>. or javascript:alert(1)');
    expect(entry).toMatch(/^<div class="m" id="m4" data-msg-num="4"><time datetime="2026-03-01T23:30:05.123Z">23:30:05<\/time><span class="n">&lt;b&gt;Eve&lt;\/b&gt;<\/span>/);
    expect(FORMATS.html.msgNumOf!(entry.trim())).toBe(4);
    const header = FORMATS.html.header({ group: 'demo', chat: '<general>', period: '2026-03-01', timeZone: 'UTC' });
    expect(header).toContain('<title>demo / &lt;general&gt; — 2026-03-01 (UTC)</title>');
    expect(FORMATS.html.msgNumOf!(header.split('\n')[1]!)).toBeUndefined();
  });

  test('markdown shows the text as typed (markup escaped) on one line per message', () => {
    const entry = FORMATS.markdown.entry(message(5, '*not bold* [link](x) <img src=x>\n`code` | pipe'), utc);
    expect(entry).toBe('- <a id="m5"></a>`23:30:05` **Bob Member**: \\*not bold\\* \\[link\\](x) &lt;img src=x><br>\\`code\\` \\| pipe\n');
    expect(FORMATS.markdown.msgNumOf!(entry.trim())).toBe(5);
  });
});

describe('logger: time zones and days', () => {
  test('the day of a message is its day in the zone', () => {
    const late = new Date('2026-03-01T23:30:00Z');
    expect(dayOf(late, 'UTC')).toBe('2026-03-01');
    expect(dayOf(late, 'Asia/Tokyo')).toBe('2026-03-02');
    expect(dayOf(new Date('2026-03-01T03:00:00Z'), 'America/New_York')).toBe('2026-02-28');
    expect(formatZoned(new Date('2026-07-01T12:00:00.045Z'), 'Europe/Berlin', 'YYYY-MM-DDTHH:mm:ss.SSSZ')).toBe('2026-07-01T14:00:00.045+02:00');
    // Parts are remembered per minute: seconds within it, and the next minute across a clock change.
    const berlin = (iso: string) => formatZoned(new Date(iso), 'Europe/Berlin', 'YYYY-MM-DD HH:mm:ss.SSS Z');
    expect(berlin('2026-03-29T00:59:01.250Z')).toBe('2026-03-29 01:59:01.250 +01:00');
    expect(berlin('2026-03-29T00:59:59.999Z')).toBe('2026-03-29 01:59:59.999 +01:00');
    expect(berlin('2026-03-29T01:00:00.000Z')).toBe('2026-03-29 03:00:00.000 +02:00');
    expect(berlin('1969-12-31T23:59:58.500Z')).toBe('1970-01-01 00:59:58.500 +01:00');
  });

  test('UTC, computed without Intl, reads as Intl reads a zone that is always at +00:00', () => {
    // Africa/Abidjan has had no offset and no clock change since 1912: Intl's answer for it is UTC's.
    const instants = ['1969-12-31T23:59:59.999Z', '2000-02-29T12:34:56.789Z', '2026-03-29T00:59:59.999Z', '2026-12-31T23:59:00.001Z', '2099-01-01T00:00:00.000Z'];
    for (const iso of instants) {
      const date = new Date(iso);
      expect(formatZoned(date, 'UTC', 'YYYY-MM-DD HH:mm:ss.SSS Z'), iso).toBe(formatZoned(date, 'Africa/Abidjan', 'YYYY-MM-DD HH:mm:ss.SSS Z'));
      expect(formatZoned(date, 'Etc/UTC', 'YYYY-MM-DD HH:mm:ss.SSS Z'), iso).toBe(formatZoned(date, 'Africa/Abidjan', 'YYYY-MM-DD HH:mm:ss.SSS Z'));
      expect(dayOf(date, 'UTC'), iso).toBe(iso.slice(0, 10));
    }
    expect(zonedToInstant({ year: 2026, month: 3, day: 29, hour: 1, minute: 30 }, 'UTC').toISOString()).toBe('2026-03-29T01:30:00.000Z');
  });

  test('a local time names its instant, also around clock changes', () => {
    expect(zonedToInstant({ year: 2026, month: 1, day: 15, hour: 9 }, 'Europe/Berlin').toISOString()).toBe('2026-01-15T08:00:00.000Z');
    expect(zonedToInstant({ year: 2026, month: 7, day: 15, hour: 9 }, 'Europe/Berlin').toISOString()).toBe('2026-07-15T07:00:00.000Z');
    expect(zonedToInstant({ year: 2026, month: 3, day: 29 }, 'Europe/Berlin').toISOString()).toBe('2026-03-28T23:00:00.000Z');
    expect(zonedToInstant({ year: 2026, month: 3, day: 30 }, 'Europe/Berlin').toISOString()).toBe('2026-03-29T22:00:00.000Z');
  });

  test('export bounds: days run to their end, local times are in the zone, offsets are kept', () => {
    expect(parseBound('2026-03-01', 'UTC', 'from')!.toISOString()).toBe('2026-03-01T00:00:00.000Z');
    expect(parseBound('2026-03-01', 'UTC', 'to')!.toISOString()).toBe('2026-03-02T00:00:00.000Z');
    expect(parseBound('2026-12-31', 'Asia/Tokyo', 'to')!.toISOString()).toBe('2026-12-31T15:00:00.000Z');
    expect(parseBound('2026-03-01T09:30', 'Europe/Berlin', 'from')!.toISOString()).toBe('2026-03-01T08:30:00.000Z');
    expect(parseBound('2026-03-01T09:30:00.5+02:00', 'UTC', 'from')!.toISOString()).toBe('2026-03-01T07:30:00.500Z');
    expect(parseBound('last-week', 'UTC', 'from')).toBeUndefined();
    expect(parseBound('2026-13-01', 'UTC', 'from')).toBeUndefined();
  });
});

describe('logger: path patterns', () => {
  test('names become safe, distinct path segments', () => {
    expect(safeSegment('general')).toBe('general');
    expect(safeSegment('Straße 5')).toBe('Straße%205');
    expect(safeSegment('../../etc/passwd')).toBe('%2E.%2F..%2Fetc%2Fpasswd');
    expect(safeSegment('.hidden')).toBe('%2Ehidden');
    expect(safeSegment('')).toBe('_');
    expect(safeSegment('a b')).not.toBe(safeSegment('a_b'));
    expect(safeSegment('a/b')).not.toBe(safeSegment('a%2Fb'));
    const long = safeSegment('x'.repeat(300));
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(120);
    expect(long).not.toBe(safeSegment(`${'x'.repeat(299)}y`));
    expect(PathPattern.parse('{group}/{chat}/{date}.{ext}').render({ group: 'demo', chat: 'a/b', date: '2026-03-01', ext: 'txt' }))
      .toBe('demo/a%2Fb/2026-03-01.txt');
  });

  test('a pattern must name its chat and uses known fields only', () => {
    expect(() => PathPattern.parse('{chat}/{date}.{ext}')).toThrow('must name the chat');
    expect(() => PathPattern.parse('{group}/{date}.{ext}')).toThrow('must name the chat');
    expect(() => PathPattern.parse('{chat_id}/{when}.{ext}')).toThrow('unknown field {when}');
    expect(() => PathPattern.parse('../{chat_id}.{ext}')).toThrow('".."');
    expect(() => PathPattern.parse('/abs/{chat_id}.{ext}')).toThrow('relative');
    expect(() => PathPattern.parse('{chat_id}/{year}/{month}.{ext}')).toThrow('{day}');
    expect(PathPattern.parse('{chat_id}.{ext}').daily).toBe(false);
    expect(PathPattern.parse('{group_id}/{chat_id}/{year}/{month}/{day}.{ext}').daily).toBe(true);
  });

  test('finding a chat\'s files reads the date back from the path', async () => {
    const root = tempDir();
    const pattern = PathPattern.parse('{group}/{chat}/{year}/{month}/{day}.{ext}');
    for (const path of ['demo/general/2026/02/28.jsonl', 'demo/general/2026/03/01.jsonl', 'demo/general/2026/03/01.txt', 'demo/other/2026/03/01.jsonl', 'demo/general/notes.jsonl']) {
      mkdirSync(join(root, path, '..'), { recursive: true });
      writeFileSync(join(root, path), '');
    }
    const found = await pattern.find(root, { group: 'demo', chat: 'general', ext: 'jsonl' });
    expect(found.map((f) => f.values)).toEqual([{ year: '2026', month: '02', day: '28' }, { year: '2026', month: '03', day: '01' }]);
    expect(await pattern.find(join(root, 'missing'), { group: 'demo', chat: 'general', ext: 'jsonl' })).toEqual([]);
  });

  test('options: one format or a list, {ext} needed for several, a real time zone', () => {
    expect(loggerOptions.parse({}).format).toEqual(['jsonl']);
    expect(loggerOptions.parse({ format: 'text' }).format).toEqual(['text']);
    expect(loggerOptions.parse({ format: ['text', 'html', 'text'] }).format).toEqual(['text', 'html']);
    const problems = (value: unknown) => (loggerOptions.safeParse(value).error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);
    expect(problems({ format: ['text', 'html'], path: '{group}/{chat}/{date}.log' })).toEqual(['path: with more than one format the path pattern needs {ext}']);
    expect(problems({ time_zone: 'Mars/Olympus' })[0]).toMatch(/^time_zone: not a time zone/);
    expect(problems({ path: '{chat}.{ext}' })[0]).toMatch(/^path: the path pattern must name the chat/);
    expect(problems({ format: 'pdf' })).toHaveLength(1);
    expect(problems({ dirr: 'x' })[0]).toMatch(/dirr/);
  });
});

describe('logger: a transcript file knows what it holds from its own tail', () => {
  const meta = { group: 'demo', chat: 'general', period: '2026-03-01', timeZone: 'UTC' };

  test('jsonl: the last msg_num from the last whole line; a torn line is cut off', async () => {
    const path = join(tempDir(), 'a.jsonl');
    writeFileSync(path, `${FORMATS.jsonl.entry(message(7, 'seven'), utc)}${FORMATS.jsonl.entry(message(8, 'eight'), utc)}{"object":"chat_mes`);
    const file = new TranscriptFile(path, FORMATS.jsonl, meta, silent);
    await file.recover();
    expect(file.last).toBe(8);
    expect(readFileSync(path, 'utf8').endsWith('"eight"')).toBe(false);
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
    file.pending.push(pendingOf(FORMATS.jsonl, message(8, 'eight again')), pendingOf(FORMATS.jsonl, message(10, 'ten')), pendingOf(FORMATS.jsonl, message(9, 'nine')));
    expect(await file.write()).toBe(2);
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).msg_num)).toEqual([7, 8, 9, 10]);
  });

  test('a holder that stood still between its size check and its write (a paused worker woken past its lease) checks again, and does not append what its successor wrote meanwhile', async () => {
    const path = join(tempDir(), 'paused.jsonl');
    const entries = [1, 2, 3].map((n) => pendingOf(FORMATS.jsonl, message(n, `m${n}`)));
    // The clock is read at the check and again right before the write: at that second read the
    // successor appends the same entries (as if during a SIGSTOP), and 10 s have passed.
    let reads = 0;
    let now = 0;
    const clock = () => {
      reads += 1;
      if (reads === 2) {
        appendFileSync(path, entries.map((entry) => entry.text).join(''));
        now += 10_000;
      }
      return now;
    };
    const paused = new TranscriptFile(path, FORMATS.jsonl, meta, silent, clock);
    paused.pending.push(...entries);
    expect(await paused.write()).toBe(0);
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).msg_num)).toEqual([1, 2, 3]);
    expect(paused.last).toBe(3);
  });

  test('jsonl: a long last line is found however far back it starts', async () => {
    const path = join(tempDir(), 'b.jsonl');
    writeFileSync(path, FORMATS.jsonl.entry(message(1, 'x'.repeat(300_000)), utc));
    const file = new TranscriptFile(path, FORMATS.jsonl, meta, silent);
    await file.recover();
    expect(file.last).toBe(1);
  });

  test('html and markdown: the header is no entry; the last entry is', async () => {
    for (const format of [FORMATS.html, FORMATS.markdown]) {
      const path = join(tempDir(), `c.${format.ext}`);
      const file = new TranscriptFile(path, format, meta, silent);
      file.pending.push(pendingOf(format, message(3, 'three\nlines')), pendingOf(format, message(4, 'four')));
      await file.write();
      const again = new TranscriptFile(path, format, meta, silent);
      await again.recover();
      expect(again.last).toBe(4);
      expect(readFileSync(path, 'utf8').startsWith(format.header(meta))).toBe(true);
    }
  });

  test('text: an index beside the file; text past it (a crash between the two) is cut off', async () => {
    const dir = tempDir();
    const path = join(dir, '2026-03-01.txt');
    const file = new TranscriptFile(path, FORMATS.text, meta, silent);
    file.pending.push(pendingOf(FORMATS.text, message(1, 'one')), pendingOf(FORMATS.text, message(2, 'two\nlines')));
    await file.write();
    expect(readFileSync(join(dir, '.2026-03-01.txt.idx'), 'utf8')).toBe(`2 ${statSync(path).size}\n`);
    const good = readFileSync(path, 'utf8');
    appendFileSync(path, '[23:30:05] <Bob Member> three, written but not in the index\n    and a torn');
    const again = new TranscriptFile(path, FORMATS.text, meta, silent);
    await again.recover();
    expect(again.last).toBe(2);
    expect(readFileSync(path, 'utf8')).toBe(good);
  });

  test('entries another process appended meanwhile (two holders of a unit on a shared dir) are not written again', async () => {
    for (const format of [FORMATS.jsonl, FORMATS.text]) {
      const path = join(tempDir(), `shared.${format.ext}`);
      const early = new TranscriptFile(path, format, meta, silent);
      early.pending.push(...[1, 2, 3].map((n) => pendingOf(format, message(n, `m${n}`))));
      await early.write();
      // A successor reads the file (last 3) and appends 4..6; the paused predecessor wakes with 4..8 pending.
      const successor = new TranscriptFile(path, format, meta, silent);
      successor.pending.push(...[4, 5, 6].map((n) => pendingOf(format, message(n, `m${n}`))));
      expect(await successor.write()).toBe(3);
      early.pending.push(...[4, 5, 6, 7, 8].map((n) => pendingOf(format, message(n, `m${n}`))));
      expect(await early.write()).toBe(2);
      // And the successor, next, takes in what the predecessor wrote.
      successor.pending.push(...[7, 8, 9].map((n) => pendingOf(format, message(n, `m${n}`))));
      expect(await successor.write()).toBe(1);
      const again = new TranscriptFile(path, format, meta, silent);
      await again.recover();
      expect(again.last).toBe(9);
      if (format === FORMATS.jsonl) expect(readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).msg_num)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      else expect(readFileSync(path, 'utf8').match(/m\d/g)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9']);
    }
  });

  test('a history reset: what was still waiting goes before the marker, the new numbering after it', async () => {
    const marker = FORMATS.jsonl.reset({ at: '2026-03-01T12:00:00Z', reason: 'recreated', previousCursor: 5, newest: undefined, chatId: '12' }, utc);
    const msgNums = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).msg_num);
    // Entries 4 and 5 of the old history still wait when the reset comes; 1 and 2 of the new one follow.
    const path = join(tempDir(), 'r.jsonl');
    const file = new TranscriptFile(path, FORMATS.jsonl, meta, silent);
    file.pending.push(...[1, 2, 3].map((n) => pendingOf(FORMATS.jsonl, message(n, `old ${n}`))));
    await file.write();
    file.pending.push(...[4, 5].map((n) => pendingOf(FORMATS.jsonl, message(n, `old ${n}`))));
    file.markReset(marker);
    file.pending.push(...[1, 2].map((n) => pendingOf(FORMATS.jsonl, message(n, `new ${n}`))));
    expect(await file.write()).toBe(4);
    expect(msgNums(path)).toEqual([1, 2, 3, 4, 5, 0, 1, 2]);
    expect(file.last).toBe(2);

    // The reset comes while a write of the old history is on its way, and new 1 arrives before it ends:
    // new 1 is not taken for old 1 (already written) and forgotten.
    const racePath = join(tempDir(), 'race.jsonl');
    const raced = new TranscriptFile(racePath, FORMATS.jsonl, meta, silent);
    raced.pending.push(...[1, 2, 3].map((n) => pendingOf(FORMATS.jsonl, message(n, `old ${n}`))));
    // The reset lands once the append has taken what it writes and before it ends (its disk write is on its way).
    const append = (raced as unknown as { appendPending: (handle: unknown) => Promise<unknown> }).appendPending.bind(raced);
    (raced as unknown as { appendPending: (handle: unknown) => Promise<unknown> }).appendPending = (handle) => {
      (raced as unknown as { appendPending: unknown }).appendPending = append;
      const on = append(handle);
      raced.markReset(marker);
      raced.pending.push(pendingOf(FORMATS.jsonl, message(1, 'new 1')));
      return on;
    };
    expect(await raced.write()).toBe(3);
    expect(raced.waiting).toBe(true);
    expect(await raced.write()).toBe(1);
    expect(msgNums(racePath)).toEqual([1, 2, 3, 0, 1]);
    expect(readFileSync(racePath, 'utf8')).toContain('new 1');
    expect(raced.waiting).toBe(false);
  });

  test('a failed write leaves the entries waiting and nothing half-written', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'blocker'), 'a file');
    const path = join(dir, 'blocker', 'x.jsonl');
    const file = new TranscriptFile(path, FORMATS.jsonl, meta, silent);
    file.pending.push(pendingOf(FORMATS.jsonl, message(1, 'one')));
    await expect(file.write()).rejects.toMatchObject({ code: 'ENOTDIR' });
    expect(file.pending).toHaveLength(1);
    rmSync(join(dir, 'blocker'));
    expect(await file.write()).toBe(1);
    expect(readFileSync(path, 'utf8')).toBe(FORMATS.jsonl.entry(message(1, 'one'), utc));
  });
});

describe('logger: the writer', () => {
  const chat = { id: '12', subject: 'general', groupId: '7', groupName: 'demo', chatsubId: '3' };

  function writer(root: string, flushIntervalMs: number): TranscriptWriter {
    const made: TranscriptWriter = new TranscriptWriter({
      root, pattern: PathPattern.parse('{group}/{chat}/{date}.{ext}'), formats: [FORMATS.jsonl], render: utc, botName: 'bot',
      flushIntervalMs, retryMaxMs: 1_000, log: silent, trouble: new DiskTrouble(silent, () => made.pending),
    });
    return made;
  }

  const linesIn = (root: string) => {
    try {
      return readFileSync(join(root, 'demo', 'general', '2026-03-01.jsonl'), 'utf8').split('\n').filter(Boolean).length;
    } catch {
      return 0;
    }
  };

  test('a busy chat is written before the flush interval is up, once 1,000 messages wait; a quiet one waits for it', async () => {
    const root = tempDir();
    const busy = writer(root, 60_000);
    busy.start();
    for (let n = 1; n <= 999; n += 1) busy.add(message(n, `m${n}`), chat);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(linesIn(root)).toBe(0);
    // The 1,000th starts a write; the tail of the burst (fewer than 1,000) comes while it runs. It does
    // not wait for the interval: written once the chat is quiet a moment, and nothing is written twice.
    busy.add(message(1000, 'm1000'), chat);
    busy.add(message(1001, 'm1001'), chat);
    // Written, and forgotten once the write is done (the lines are on disk a moment before). The wait is
    // bounded only so a broken writer fails rather than hangs: the interval (60 s) is far beyond it.
    for (let i = 0; i < 1_000 && (linesIn(root) < 1001 || busy.pending > 0); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(linesIn(root)).toBe(1001);
    expect(busy.pending).toBe(0);
    // Quiet for a while (the writer's look finds nothing waiting): the next message waits for the
    // interval (or the stop), as in a quiet chat.
    await new Promise((resolve) => setTimeout(resolve, 100));
    busy.add(message(1002, 'm1002'), chat);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(linesIn(root)).toBe(1001);
    expect(await busy.stop(Date.now() + 2_000)).toBe(true);
    expect(linesIn(root)).toBe(1002);
  });
  test('a reset: the file of its day gets the marker; a new message dated on another day goes to that day\'s file after what it had', async () => {
    const root = tempDir();
    const made = writer(root, 60_000);
    const day = (d: string) => join(root, 'demo', 'general', `${d}.jsonl`);
    const msgNums = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).msg_num);
    const on = (d: string, n: number, text: string) => message(n, text, { created: `${d}T23:50:00.000Z` });
    for (const n of [1, 2, 3]) made.add(on('2026-03-01', n, `old ${n}`), chat);
    for (const n of [4, 5]) made.add(on('2026-03-02', n, `old ${n}`), chat);
    expect(await made.flush()).toBe(true);
    made.add(on('2026-03-02', 6, 'old 6'), chat);
    made.reset(chat, { at: '2026-03-02T23:55:00.000Z', reason: 'recreated', previousCursor: 6, newest: undefined, chatId: '12' });
    // The new history's first message is dated on the first day (a history restored with its dates).
    made.add(on('2026-03-01', 1, 'new 1'), chat);
    made.add(on('2026-03-02', 2, 'new 2'), chat);
    expect(await made.stop(Date.now() + 2_000)).toBe(true);
    expect(msgNums(day('2026-03-01'))).toEqual([1, 2, 3, 1]);
    expect(msgNums(day('2026-03-02'))).toEqual([4, 5, 6, 0, 2]);
    // Days the writer only looked at (none of them holds the chat) are not made by the reset.
    expect(readdirSync(join(root, 'demo', 'general')).sort()).toEqual(['2026-03-01.jsonl', '2026-03-02.jsonl']);
  });
});
