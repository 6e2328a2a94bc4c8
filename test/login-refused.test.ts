import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { cleanEnv, runCli } from './helpers/cli.js';
import { DEMO } from './helpers/service.js';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { Supervisor } from '../src/supervisor/supervisor.js';
import { adminOk, makeEnv, post, probes, type Env, waitFor } from './helpers/supervisor.js';

/**
 * Issue 13 item 10: a login the service refuses (wrong password, banned account) is said once, in
 * words, with the line of bots.yaml to fix; the bot waits for the file to change; `groupwire run`
 * exits 3 when every bot is refused; expected failures never log a stack at info or warn.
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const WRONG = 'not-the-password-4711';

/** `file:line:` of the first line of bots.yaml holding `text`. */
function lineOf(file: string, text: string): string {
  const index = readFileSync(file, 'utf8').split('\n').findIndex((line) => line.includes(text));
  expect(index, `${text} is in ${file}`).toBeGreaterThanOrEqual(0);
  return `${file}:${index + 1}:`;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** stderr's lines that are not JSON log lines: what the CLI itself says to a person. */
function plainLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{'));
}

describe('groupwire run with a refused login (child process)', () => {
  test('a wrong password: one clear line naming the file and line to fix, no stack trace, exit 3', async () => {
    env = await makeEnv([{ name: 'helper', login: { email: DEMO.bot[0], password: WRONG }, chats: [{ chat: 'general' }] }]);
    const result = await runCli(['run', '--log-level', 'info', env.configFile], cleanEnv());
    expect(result.code, result.stderr).toBe(3);
    const plain = plainLines(result.stderr);
    expect(plain).toHaveLength(2);
    expect(plain[0]).toMatch(new RegExp(`^${escape('groupwire: bot helper cannot log in as bot@example.com: the e-mail address or password is wrong (unauthorized_error: incorrect e-mail address or password). Fix the password in ' + lineOf(env.configFile, WRONG))}\\d+\\.$`));
    expect(plain[1]).toBe('groupwire: no bot can log in; exiting (code 3)');
    // The log said it once too, at error level, as a sentence and not as an error object.
    const logged = result.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
    const refusals = logged.filter((line) => String(line.msg).includes('cannot log in'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]!.level).toBe(50);
    expect(refusals[0]!.err).toBeUndefined();
    expect(result.stderr).not.toMatch(/\n\s+at |"stack"/);
    expect(result.stderr).not.toContain(WRONG);
  });

  test('a password from ${VAR}: the message names the variable and says to restart', async () => {
    env = await makeEnv([{ name: 'helper', login: { email: DEMO.bot[0], password: '${GW_TEST_BOT_PASSWORD}' }, chats: [{ chat: 'general' }] }]);
    const result = await runCli(['run', env.configFile], cleanEnv({ GW_TEST_BOT_PASSWORD: WRONG }));
    expect(result.code, result.stderr).toBe(3);
    const [line] = plainLines(result.stderr);
    expect(line).toContain('The password comes from ${GW_TEST_BOT_PASSWORD} in ');
    expect(line).toContain(lineOf(env.configFile, '${GW_TEST_BOT_PASSWORD}'));
    expect(line).toContain('set that variable right and restart');
    expect(result.stderr).not.toContain(WRONG);
  });

  test('a token the service does not know (authentication) is refused the same way', async () => {
    env = await makeEnv([]);
    writeFileSync(env.configFile, readFileSync(env.configFile, 'utf8').replace('bots: []', [
      'bots:', '  - name: tokenbot', '    login: { token: not-a-known-token-0815 }', '    chats: [{ group: demo, chat: general }]', '',
    ].join('\n')));
    const result = await runCli(['run', env.configFile], cleanEnv());
    expect(result.code, result.stderr).toBe(3);
    expect(plainLines(result.stderr)[0]).toContain('groupwire: bot tokenbot cannot log in as an API token: the service does not accept the token (authentication: unknown token). Fix the token in ');
    expect(result.stderr).not.toContain('not-a-known-token-0815');
  });

  test('a banned account (dave) is refused the same way', async () => {
    env = await makeEnv([{ name: 'banned', login: { email: DEMO.dave[0], password: DEMO.dave[1] }, chats: [{ chat: 'general' }] }]);
    const result = await runCli(['run', env.configFile], cleanEnv());
    expect(result.code, result.stderr).toBe(3);
    expect(plainLines(result.stderr)[0]).toMatch(
      /^groupwire: bot banned cannot log in as dave@example\.com: the account is banned from \(or not a member of\) group demo \(inadequate_permissions: \w+\)\. Have a moderator readmit it, or log the bot in as another account in .*bots\.yaml:\d+:\d+\.$/,
    );
    expect(result.stderr).not.toMatch(/\n\s+at |"stack"/);
  });
});

describe('a supervisor with good and refused bots', () => {
  test('the good bot runs, the refused ones wait, and fixing the password in bots.yaml logs that bot in', async () => {
    env = await makeEnv([]);
    const probe = env.probe('probe');
    const bots = (carolPassword: string) => [
      { name: 'good', chats: [{ chat: 'general' }], plugins: [{ use: probe, with: { key: 'good' } }] },
      { name: 'wrong', login: { email: DEMO.carol[0], password: carolPassword }, chats: [{ chat: 'random' }], plugins: [{ use: probe, with: { key: 'wrong' } }] },
      { name: 'banned', login: { email: DEMO.dave[0], password: DEMO.dave[1] }, chats: [{ chat: 'general' }] },
    ];
    env.writeConfig(bots(WRONG));
    const supervisor = await env.start({ waitConnected: false });
    let everyBotRefused = false;
    void supervisor.everyLoginRefused().then(() => {
      everyBotRefused = true;
    });
    const [good, wrong, banned] = supervisor.bots;

    await good!.connected();
    await waitFor('both refusals', () => wrong!.loginRefusal && banned!.loginRefusal);
    await post(env.svc, 'general', 'bob', 'the good bot still hears this');
    await waitFor('the good bot saw the message', () => probes().seen.good?.some((seen) => seen.text === 'the good bot still hears this'));
    expect(everyBotRefused).toBe(false);

    const said = (text: string) => env!.log.lines.filter((line) => String(line.msg).includes(text));
    expect(said('bot wrong cannot log in as carol@example.com: the e-mail address or password is wrong')).toHaveLength(1);
    expect(said('bot wrong cannot log in')[0]!.msg).toContain(`Fix the password in ${lineOf(env.configFile, WRONG)}`);
    expect(said('bot banned cannot log in as dave@example.com: the account is banned from (or not a member of) group demo')).toHaveLength(1);

    // Fixed in the file: the bot tries again by itself, logs in and works.
    env.writeConfig(bots(DEMO.carol[1]));
    await waitFor('the fixed bot connected', async () => {
      await wrong!.connected();
      return true;
    }, 30_000);
    expect(wrong!.loginRefusal).toBeUndefined();
    expect(said('changed; trying the login again').some((line) => line.bot === 'wrong')).toBe(true);
    await post(env.svc, 'random', 'bob', 'the fixed bot hears this');
    await waitFor('the fixed bot saw the message', () => probes().seen.wrong?.some((seen) => seen.text === 'the fixed bot hears this'));
    expect(banned!.loginRefusal).toBeDefined();

    // Expected failures are said as reasons: no error object (with its stack) at info or warn, and none for a refusal.
    const withStacks = env.log.lines.filter((line) => line.err !== undefined && Number(line.level) <= 40);
    expect(withStacks).toEqual([]);
    expect(env.log.lines.filter((line) => String(line.msg).includes('cannot log in') && line.err !== undefined)).toEqual([]);
    expect(JSON.stringify(env.log.lines)).not.toContain(WRONG);
  }, 90_000);

  test('without a change to bots.yaml, a refused bot tries again after the retry interval (an account readmitted on the service)', async () => {
    env = await makeEnv([{ name: 'banned', login: { email: DEMO.dave[0], password: DEMO.dave[1] }, chats: [{ chat: 'general' }] }]);
    // The interval is 15 minutes in use; a test shortens it through the supervisor's option.
    const supervisor = await Supervisor.start(await loadBotsConfig(env.configFile), { log: env.log.logger, loginRetryMs: 1500 });
    env.supervisor = supervisor;
    const [banned] = supervisor.bots;
    await waitFor('the refusal', () => banned!.loginRefusal);
    const refused = env.log.lines.find((line) => String(line.msg).startsWith('bot banned cannot log in'))!;
    expect(refused.msg).toContain(`Waiting for ${env.configFile} to change (or 2 s) to try again.`);

    await adminOk(env.svc, 'subscriptions', { group: 'demo', user: DEMO.dave[0], role: 'member' });
    await waitFor('the readmitted bot connected', async () => {
      await banned!.connected();
      return true;
    }, 30_000);
    expect(banned!.loginRefusal).toBeUndefined();
    expect(env.log.withMessage('trying the refused login again (the retry interval is up)').length).toBeGreaterThanOrEqual(1);
    expect(env.log.withMessage('the login works now')).toHaveLength(1);
  }, 60_000);
});
