import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import { exportTranscript, type ExportOptions } from '../src/cli/transcript-command.js';
import { parseBound } from '../plugins/logger/export.js';
import { cleanEnv, envFor, ROOT, runCli, succeeded } from './helpers/cli.js';
import { startTestService, type TestService } from './helpers/service.js';

/** `groupwire transcript export`: from the logger's files, or from the service when there are none. */

let svc: TestService;
const dir = mkdtempSync(join(tmpdir(), 'groupwire-transcript-'));
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.close();
  rmSync(dir, { recursive: true, force: true });
});

function message(msgNum: number, created: string, text: string, who = 'Bob Member'): ChatMessage {
  return {
    object: 'chat_message', id: `90071992547409${90 + msgNum}`, created, version: 1, user_id: '9007199254740993', group_id: '7', chat_id: '12',
    type: 'chat_msg_type_normal', message: text, msg_num: msgNum, display_name: who, user_name: 'bob', profile_photo_url: '',
    profile_privacy: 'profile_members', email: 'bob@example.com',
  };
}

/** Files as the logger writes them (UTC days), with one message in two files, and a torn last line. */
function writeTranscripts(root: string): void {
  const day = (name: string, messages: ChatMessage[], tail = '') => {
    mkdirSync(join(root, 'demo', 'general'), { recursive: true });
    writeFileSync(join(root, 'demo', 'general', `${name}.jsonl`), messages.map((m) => `${JSON.stringify(m)}\n`).join('') + tail);
  };
  day('2026-03-01', [message(1, '2026-03-01T10:00:00.000Z', 'first <b>day</b>'), message(2, '2026-03-01T23:30:00.000Z', 'late on the first')]);
  day('2026-03-02', [message(2, '2026-03-01T23:30:00.000Z', 'late on the first'), message(3, '2026-03-02T12:00:00.000Z', 'second day', 'Carol Member')], '{"object":"chat_mess');
  day('2026-03-05', [message(4, '2026-03-05T08:00:00.000Z', 'later')]);
  mkdirSync(join(root, 'other', 'general'), { recursive: true });
  writeFileSync(join(root, 'other', 'general', '2026-03-01.jsonl'), `${JSON.stringify(message(1, '2026-03-01T09:00:00.000Z', 'elsewhere'))}\n`);
}

function options(extra: Partial<ExportOptions>): ExportOptions {
  return {
    chat: 'general', group: 'demo', period: { start: parseBound('2026-03-01', 'UTC', 'from')!, end: parseBound('2026-03-02', 'UTC', 'to')! },
    format: 'text', timeZone: 'UTC', timeFormat: 'YYYY-MM-DD HH:mm:ss', dir: join(dir, 'files'), pathPattern: '{group}/{chat}/{date}.{ext}',
    source: 'auto', client: () => { throw new Error('the service must not be asked'); }, ...extra,
  };
}

describe('transcript export', () => {
  beforeAll(() => writeTranscripts(join(dir, 'files')));

  test('from the files: the period, each message once, in order, in any format', async () => {
    const text = await exportTranscript(options({}));
    expect(text).toMatchObject({ source: 'files', count: 3, chat: 'general' });
    expect(text.text).toBe([
      '[2026-03-01 10:00:00] <Bob Member> first <b>day</b>',
      '[2026-03-01 23:30:00] <Bob Member> late on the first',
      '[2026-03-02 12:00:00] <Carol Member> second day',
      '',
    ].join('\n'));
    expect(text.notes).toEqual([]);

    const jsonl = await exportTranscript(options({ format: 'jsonl' }));
    const lines = jsonl.text.trimEnd().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as ChatMessage).msg_num)).toEqual([1, 2, 3]);
    expect(lines[0]).toBe(JSON.stringify(message(1, '2026-03-01T10:00:00.000Z', 'first <b>day</b>')));

    const html = await exportTranscript(options({ format: 'html' }));
    expect(html.text).toMatch(/^<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>demo \/ general — 2026-03-01T00:00:00\.000Z to 2026-03-02T23:59:59\.999Z \(UTC\)<\/title>/);
    expect(html.text).toContain('first &lt;b&gt;day&lt;/b&gt;');
    expect(html.text.endsWith('</body></html>\n')).toBe(true);
    const markdown = await exportTranscript(options({ format: 'markdown' }));
    expect(markdown.text.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(3);
  });

  test('days are the export\'s zone; local times and instants work as bounds', async () => {
    // 2026-03-02 in Tokyo runs from 03-01T15:00Z to 03-02T15:00Z.
    const tokyo = await exportTranscript(options({
      timeZone: 'Asia/Tokyo', timeFormat: 'HH:mm', period: { start: parseBound('2026-03-02', 'Asia/Tokyo', 'from')!, end: parseBound('2026-03-02', 'Asia/Tokyo', 'to')! },
    }));
    expect(tokyo.text).toBe('[08:30] <Bob Member> late on the first\n[21:00] <Carol Member> second day\n');
    const narrow = await exportTranscript(options({ period: { start: parseBound('2026-03-01T23:30', 'UTC', 'from')!, end: parseBound('2026-03-01T23:30', 'UTC', 'to')! } }));
    expect(narrow.count).toBe(1);
    // Files that begin after the period's start say so.
    const early = await exportTranscript(options({ period: { start: parseBound('2026-02-01', 'UTC', 'from')!, end: parseBound('2026-03-01', 'UTC', 'to')! } }));
    expect(early.notes).toEqual(['the transcript files of general begin at 2026-03-01T10:00:00.000Z; for earlier messages use --source service']);
  });

  test('the CLI: a file with --out, the chat named by subject; usage mistakes exit 2', async () => {
    const out = join(dir, 'out', 'general.md');
    const [written, ambiguous, badDate, reversed, badFormat, missing] = await Promise.all([
      runCli(['transcript', 'export', '--chat', 'general', '--group', 'demo', '--from', '2026-03-01', '--to', '2026-03-05', '--format', 'markdown', '--dir', join(dir, 'files'), '--out', out], cleanEnv()),
      runCli(['transcript', 'export', '--chat', 'general', '--from', '2026-03-01', '--to', '2026-03-05', '--format', 'text', '--dir', join(dir, 'files')], cleanEnv()),
      runCli(['transcript', 'export', '--chat', 'general', '--from', 'last-week', '--to', '2026-03-05', '--format', 'text'], cleanEnv()),
      runCli(['transcript', 'export', '--chat', 'general', '--from', '2026-03-05', '--to', '2026-03-01', '--format', 'text'], cleanEnv()),
      runCli(['transcript', 'export', '--chat', 'general', '--from', '2026-03-01', '--to', '2026-03-05', '--format', 'pdf'], cleanEnv()),
      runCli(['transcript', 'export', '--from', '2026-03-01', '--to', '2026-03-05', '--format', 'text'], cleanEnv()),
    ]);
    succeeded(written);
    expect(written.stderr).toBe(`groupwire: wrote 4 messages of general from the files to ${out}\n`);
    expect(readFileSync(out, 'utf8').split('\n').filter((l) => l.startsWith('- <a id="m'))).toHaveLength(4);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('several chats fit general');
    expect(badDate).toMatchObject({ code: 2 });
    expect(badDate.stderr).toContain('--from last-week is not a date (2024-05-01, 2024-05-01T09:30, 2024-05-01T09:30:00Z, today, yesterday or 7d)');
    expect(reversed.stderr).toContain('--to is before --from');
    expect(badFormat.stderr).toContain('--format must be one of jsonl, text, html, markdown');
    expect(missing.stderr).toContain('--chat is required');
    expect(missing.stderr).toContain("Run 'groupwire transcript export --help' for usage.");
  });

  test('without files, from the service\'s history (with the client commands\' credentials)', async () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty, { recursive: true });
    const [fromService, noChat] = await Promise.all([
      runCli(['transcript', 'export', '--chat', 'general', '--group', 'demo', '--from', '2000-01-01', '--to', '2100-12-31', '--format', 'text', '--dir', empty, '--time-format', 'HH:mm'], envFor(svc, 'bob')),
      runCli(['transcript', 'export', '--chat', 'nowhere', '--group', 'demo', '--from', '2000-01-01', '--to', '2100-12-31', '--format', 'text', '--dir', empty], envFor(svc, 'bob')),
    ]);
    expect(succeeded(fromService)).toMatch(/^\[\d\d:\d\d\] <Mo Moderator> Welcome to #general!\n\[\d\d:\d\d\] <Bob Member> Hi all\n\[\d\d:\d\d\] <Carol Member> Hello from Tokyo\n$/);
    expect(noChat.code).toBe(2);
    expect(noChat.stderr).toContain('group demo has no chat nowhere');
  });

  test('the README\'s example, with relative dates, finds the messages of the last days (the demo\'s are from today)', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const example = readme.split('\n').find((line) => line.startsWith('npx groupwire transcript export '));
    expect(example).toBeDefined();
    // Plain words only, so splitting at spaces is how the shell reads it.
    expect(example).toMatch(/^[\w ./-]+$/);
    const args = example!.split(' ').slice(2);
    expect(args).toEqual(expect.arrayContaining(['--from', '7d', '--to', 'today']));
    const cwd = join(dir, 'readme-example');
    mkdirSync(cwd, { recursive: true });
    const exported = succeeded(await runCli(args, envFor(svc, 'bob'), cwd));
    expect(exported).toContain('Hello from Tokyo');
    expect(exported).toContain('Welcome to #general!');
  });

  test('today, yesterday and Nd are days counted back from today in --tz', () => {
    const now = new Date('2026-03-10T23:30:00Z');
    expect(parseBound('today', 'UTC', 'from', now)?.toISOString()).toBe('2026-03-10T00:00:00.000Z');
    expect(parseBound('today', 'UTC', 'to', now)?.toISOString()).toBe('2026-03-11T00:00:00.000Z');
    expect(parseBound('yesterday', 'UTC', 'from', now)?.toISOString()).toBe('2026-03-09T00:00:00.000Z');
    expect(parseBound('7d', 'UTC', 'from', now)?.toISOString()).toBe('2026-03-03T00:00:00.000Z');
    expect(parseBound('0d', 'UTC', 'to', now)?.toISOString()).toBe('2026-03-11T00:00:00.000Z');
    // Already the 11th in Berlin: its today starts at 23:00 UTC on the 10th.
    expect(parseBound('today', 'Europe/Berlin', 'from', now)?.toISOString()).toBe('2026-03-10T23:00:00.000Z');
    // Across the month's start.
    expect(parseBound('12d', 'UTC', 'from', now)?.toISOString()).toBe('2026-02-26T00:00:00.000Z');
    expect(parseBound('7 d', 'UTC', 'from', now)).toBeUndefined();
    expect(parseBound('-1d', 'UTC', 'from', now)).toBeUndefined();
  });
});
