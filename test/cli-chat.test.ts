import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, ROOT, type CliResult } from './helpers/cli.js';
import { openChat } from './helpers/chat-socket.js';
import { admin, call, loginAs, ok, startTestService, type TestService } from './helpers/service.js';
import { post } from './helpers/supervisor.js';

/** `groupwire chat` as a child process with its input piped: lines, then the end of input (Ctrl-D's effect). */

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.close();
});

/** Runs `groupwire chat ARGS`, writes `input` to its stdin and closes it (`holdMs` later: as a person typing would). */
function chat(args: string[], input: string, vars: Record<string, string> = {}, holdMs = 0): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, `${ROOT}src/cli/main.ts`, 'chat', ...args], {
      cwd: ROOT, env: cleanEnv({ GROUPWIRE_URL: svc.baseUrl, GROUPWIRE_CA_FILE: svc.service.caFile!, ...vars }), stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    if (holdMs === 0) child.stdin.end(input);
    else {
      child.stdin.write(input);
      setTimeout(() => child.stdin.end(), holdMs);
    }
  });
}

async function generalHistory(): Promise<Array<{ user_name: string; message: string; msg_num: number }>> {
  const auth = await loginAs(svc, 'mo');
  const chats = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth }));
  const general = chats.data.find((c: { subject: string }) => c.subject === 'general');
  const history = ok(await call(svc, 'getchathistory', { chat_id: general.id, limit: 100, sort_dir: 'asc' }, { auth }));
  return history.data;
}

const TIME = '\\[\\d{2}:\\d{2}\\]';

describe('groupwire chat with piped input', () => {
  it('posts every line before the end of input, shows each with time and name, and exits 0', { timeout: 60_000 }, async () => {
    const lines = ['first from bob', 'second from bob', 'third, right before the end'];
    const result = await chat(['--as', 'bob', 'general'], `${lines[0]}\n\n${lines[1]}\n${lines[2]}`);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    // Shown as the others' lines are, once the service has them, in the order typed.
    const shown = lines.map((line) => {
      const match = new RegExp(`^${TIME} <Bob Member> ${line}$`, 'm').exec(result.stdout);
      expect(match, `${line} in\n${result.stdout}`).not.toBeNull();
      return match!.index;
    });
    expect([...shown].sort((a, b) => a - b)).toEqual(shown);
    // The chat's recent history first, then the conversation; no prompt noise when the input is not a terminal.
    expect(result.stdout).toMatch(new RegExp(`^${TIME} <Mo Moderator> Welcome to #general!$`, 'm'));
    expect(result.stdout).not.toContain('general> ');
    const stored = (await generalHistory()).filter((m) => m.user_name === 'bob').map((m) => m.message);
    expect(stored.slice(-3)).toEqual(lines);
  });

  it('a line answered at once by someone else is shown before the answer, in the chat\'s order', { timeout: 60_000 }, async () => {
    // carol answers bob's line the moment it reaches her socket: her answer can reach bob's terminal
    // before bob's own line is confirmed (the service does not echo a member's own posts).
    const carol = await loginAs(svc, 'carol');
    const general = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: carol })).data
      .find((c: { subject: string }) => c.subject === 'general');
    const socket = await openChat(svc, carol, String(general.chat_sub.id), { no_history: 'true' });
    const answered = socket.waitForMessage('question from bob', 30_000).then(() => {
      socket.ws.send(JSON.stringify({ object: 'chat_post', message: 'answer from carol' }));
    });
    // The input stays open a while, as at a terminal: the line is confirmed by the CLI's own look at
    // the history, not by the end of input.
    const result = await chat(['--as', 'bob', 'general'], 'question from bob\n', {}, 2_000);
    await answered;
    socket.ws.close();
    expect(result.code, result.stderr).toBe(0);
    const question = result.stdout.search(new RegExp(`^${TIME} <Bob Member> question from bob$`, 'm'));
    const answer = result.stdout.search(new RegExp(`^${TIME} <Carol Member> answer from carol$`, 'm'));
    expect(question, result.stdout).toBeGreaterThanOrEqual(0);
    expect(answer, result.stdout).toBeGreaterThan(question);
  });

  it('--as a demo member uses that member\'s password, not GROUPWIRE_PASSWORD exported for another account (the demo\'s export lines)', { timeout: 60_000 }, async () => {
    const result = await chat(['--as', 'carol', 'general'], 'carol with alice exported\n', { GROUPWIRE_EMAIL: 'alice@example.com', GROUPWIRE_PASSWORD: 'alice-demo' });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^${TIME} <Carol Member> carol with alice exported$`, 'm'));
  });

  it('takes the login flags of every client command: --email/--password, --token (#36 item 10)', { timeout: 60_000 }, async () => {
    const flags = await chat(['--email', 'carol@example.com', '--password', 'carol-demo', 'general'], 'carol by --email\n');
    expect(flags.code, flags.stderr).toBe(0);
    expect(flags.stdout).toContain('Talking in demo/general as carol@example.com.');
    expect(flags.stdout).toMatch(new RegExp(`^${TIME} <Carol Member> carol by --email$`, 'm'));
    const token = String(ok(await admin(svc, 'tokens', { user: 'bob@example.com' })).token);
    const byToken = await chat(['--token', token, '--token-scheme', 'bearer', 'general'], 'bob by token\n');
    expect(byToken.code, byToken.stderr).toBe(0);
    expect(byToken.stdout).toMatch(new RegExp(`^${TIME} <Bob Member> bob by token$`, 'm'));
    const stored = (await generalHistory()).map((m) => `${m.user_name}: ${m.message}`);
    expect(stored.slice(-2)).toEqual(['carol: carol by --email', 'bob: bob by token']);
    // Two answers to "who talks" are a usage mistake, not one silently dropped.
    const both = await chat(['--as', 'bob', '--email', 'carol@example.com', 'general'], '');
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--as and --email both say who talks: give one');
  });

  it('a line with the same text as an earlier one is posted and shown again', { timeout: 60_000 }, async () => {
    const before = (await generalHistory()).filter((m) => m.user_name === 'bob' && m.message === 'Hi all').length;
    expect(before).toBeGreaterThan(0);
    const result = await chat(['--as', 'bob', 'general'], 'Hi all\n');
    expect(result.code, result.stderr).toBe(0);
    const after = (await generalHistory()).filter((m) => m.user_name === 'bob' && m.message === 'Hi all').length;
    expect(after).toBe(before + 1);
    // Once from the history on connect, once as posted now.
    expect(result.stdout.match(new RegExp(`^${TIME} <Bob Member> Hi all$`, 'gm'))).toHaveLength(before + 1);
  });

  it('a line the service refuses is said, the others are posted, exit 1', { timeout: 60_000 }, async () => {
    const result = await chat(['--as', 'carol', 'general'], `before the long one\n${'x'.repeat(12_000)}\nafter the long one\n`);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`^${TIME} <Carol Member> before the long one$`, 'm'));
    expect(result.stdout).toMatch(new RegExp(`^${TIME} <Carol Member> after the long one$`, 'm'));
    expect(result.stdout).toContain('(not posted "xxxxxxxx');
    expect(result.stdout).toContain('(invalid_value: message)');
    const stored = (await generalHistory()).filter((m) => m.user_name === 'carol').map((m) => m.message);
    expect(stored.slice(-2)).toEqual(['before the long one', 'after the long one']);
  });

  it('another member\'s control characters (an ESC sequence, a lone CR) are shown as codes, never sent raw to this terminal', { timeout: 60_000 }, async () => {
    // carol's message is in the history the chat command shows on connect.
    await post(svc, 'general', 'carol', 'red\x1b[31m alert\rhidden start\u0007');
    const result = await chat(['--as', 'bob', 'general'], '');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(result.stdout).toContain('<Carol Member> red\\u{1b}[31m alert');
    expect(result.stdout).toMatch(/\n {8,}hidden start\\u\{7\}\n/);
  });

  it('a banned member is told in words why, exit 1', { timeout: 60_000 }, async () => {
    const result = await chat(['--as', 'dave', 'general'], 'hello?\n');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^groupwire: you may not see the chats of this group \(inadequate_permissions: \w+\)\n$/);
  });
});
