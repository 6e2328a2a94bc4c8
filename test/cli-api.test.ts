import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, envFor, outputs, PASSWORDS, runCli, succeeded } from './helpers/cli.js';
import { admin, call, loginAs, ok, startTestService, type TestService } from './helpers/service.js';

let svc: TestService;
const tokens: string[] = [];

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.close();
});

async function tokenOf(user: string): Promise<string> {
  const { token } = ok(await admin(svc, 'tokens', { user }));
  tokens.push(token);
  return token;
}

describe('groupwire api', () => {
  it('prints the answer of a GET operation as indented JSON', async () => {
    const out = succeeded(await runCli(['api', 'getchats', '--group_name', 'demo'], envFor(svc, 'bob')));
    const list = JSON.parse(out);
    expect(list.object).toBe('list');
    expect(list.data.map((chat: { subject: string }) => chat.subject)).toEqual(expect.arrayContaining(['general', 'random']));
    expect(out).toMatch(/^\{\n {2}"object": "list",\n/);
  });

  it('takes --name=value as well as --name value', async () => {
    const out = succeeded(await runCli(['api', 'getchats', '--group_name=demo', '--limit', '1'], envFor(svc, 'bob')));
    const list = JSON.parse(out);
    expect(list.data).toHaveLength(1);
    expect(list.has_more).toBe(true);
  });

  it('--extended answers [result, user]', async () => {
    const out = succeeded(await runCli(['api', 'getchats', '--group_name', 'demo', '--extended'], envFor(svc, 'bob')));
    const [list, user] = JSON.parse(out);
    expect(list.object).toBe('list');
    expect(user).toMatchObject({ object: 'user', email: 'bob@example.com' });
  });

  it('calls a POST operation with the csrf token fetched by itself', async () => {
    const out = succeeded(await runCli(['api', 'newchat', '--group_name', 'demo', '--subject', 'x', '--desc', 'y'], envFor(svc, 'mo')));
    const chat = JSON.parse(out);
    expect(chat).toMatchObject({ object: 'chat', subject: 'x', desc: 'y' });
    const chats = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: await loginAs(svc, 'mo') }));
    expect(chats.data.some((c: { id: unknown }) => String(c.id) === String(chat.id))).toBe(true);
  });

  it('logs in with GROUPWIRE_TOKEN (basic or bearer), for GET and POST', async () => {
    const token = await tokenOf('mo@example.com');
    const list = JSON.parse(succeeded(await runCli(['api', 'getchats', '--group_name', 'demo'], envFor(svc, { token }))));
    expect(list.object).toBe('list');
    const bearer = envFor(svc, { token }, { GROUPWIRE_TOKEN_SCHEME: 'bearer' });
    const chat = JSON.parse(succeeded(await runCli(['api', 'newchat', '--group_name', 'demo', '--subject', 'via token', '--desc', 'd'], bearer)));
    expect(chat).toMatchObject({ object: 'chat', subject: 'via token' });
    const flags = ['--url', svc.baseUrl, '--ca-file', svc.service.caFile!, '--token', token, '--token-scheme', 'bearer'];
    expect(JSON.parse(succeeded(await runCli(['api', 'getdrafts', ...flags], cleanEnv()))).object).toBe('list');
  });

  it('exits 1 on an error from the service, saying it in words with its type and extra', async () => {
    const denied = await runCli(['api', 'getactivitylog', '--group_name', 'demo'], envFor(svc, 'bob'));
    expect(denied.code).toBe(1);
    expect(denied.stderr).toBe('groupwire: only moderators can read the activity log (inadequate_permissions: view_activity)\n');
    expect(denied.stdout).toBe('');
    const unknown = await runCli(['api', 'getchats', '--group_name', 'no-such-group'], envFor(svc, 'bob'));
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('groupwire: group "no-such-group" was not found (bad_request: invalid group_name)\n');
    const limit = await runCli(['api', 'getchats', '--group_name', 'demo', '--limit', '500'], envFor(svc, 'bob'));
    expect(limit.code).toBe(1);
    expect(limit.stderr).toContain('groupwire: limit must be a whole number from 1 to 100 (invalid_value: limit)');
  });

  it('exits 1 on a wrong password or token without printing either', async () => {
    const wrong = await runCli(['api', 'getchats', '--group_name', 'demo'], envFor(svc, 'bob', { GROUPWIRE_PASSWORD: 'hunter2-not-it' }));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^groupwire: the e-mail address or password is wrong \(unauthorized_error: /);
    const flag = await runCli(['api', 'getchats', '--group_name', 'demo', '--email', 'bob@example.com', '--password', 'hunter2-not-it'],
      cleanEnv({ GROUPWIRE_URL: svc.baseUrl, GROUPWIRE_CA_FILE: svc.service.caFile! }));
    expect(flag.code).toBe(1);
    const badToken = 'f00d'.repeat(16);
    tokens.push(badToken);
    const token = await runCli(['api', 'getchats', '--group_name', 'demo'], envFor(svc, { token: badToken }));
    expect(token.code).toBe(1);
    expect(token.stderr).toMatch(/^groupwire: \w+/);
    for (const result of [wrong, flag, token]) expect(`${result.stdout}${result.stderr}`).not.toMatch(/hunter2-not-it|f00df00d/);
  });

  it('exits 2 on usage mistakes, pointing at the command\'s help', async () => {
    const env = envFor(svc, 'bob');
    // The CLI as a whole; every other mistake of the api arguments is in cli-units.test.ts.
    const cases = [['api', 'nosuchop'], ['api', 'getchats', '--group_name'], ['api', 'newchat', '--all', '--group_name', 'demo']];
    const results = await Promise.all(cases.map((args) => runCli(args, env)));
    results.forEach((result, index) => {
      expect(result.code, cases[index]!.join(' ')).toBe(2);
      expect(result.stderr).toMatch(/^groupwire: .+\nRun 'groupwire api --help' for usage\.\n$/);
      expect(result.stdout).toBe('');
    });
    expect(results[0]!.stderr).toContain('unknown operation nosuchop');
    const unknownCommand = await runCli(['nosuch'], env);
    expect(unknownCommand.code).toBe(2);
    expect(unknownCommand.stderr).toContain("Run 'groupwire --help'");
  });

  it('exits 2 naming what to set when the address or credentials are missing', async () => {
    // From a folder without a demo file (the repo's may hold one of a running demo or serve).
    const noUrl = await runCli(['api', 'getchats', '--group_name', 'demo'], cleanEnv({ GROUPWIRE_EMAIL: 'bob@example.com', GROUPWIRE_PASSWORD: 'bob-demo' }), tmpdir());
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('GROUPWIRE_URL');
    const noCredentials = await runCli(['topics', '--group', 'demo'], cleanEnv({ GROUPWIRE_URL: svc.baseUrl }));
    expect(noCredentials.code).toBe(2);
    expect(noCredentials.stderr).toMatch(/GROUPWIRE_EMAIL and GROUPWIRE_PASSWORD, or GROUPWIRE_TOKEN/);
    expect(noCredentials.stderr).toContain("Run 'groupwire topics --help'");
    const noPassword = await runCli(['activity', '--group', 'demo'], cleanEnv({ GROUPWIRE_URL: svc.baseUrl, GROUPWIRE_EMAIL: 'mo@example.com' }));
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain('GROUPWIRE_PASSWORD');
    const noCa = await runCli(['topics', '--group', 'demo'], envFor(svc, 'bob', { GROUPWIRE_CA_FILE: '/nonexistent/ca.pem' }));
    expect(noCa.code).toBe(2);
    expect(noCa.stderr).toContain('/nonexistent/ca.pem');
  });

  // The client retries a failed connection with backoff before giving up, hence the longer timeout.
  it('without the CA file the TLS failure is reported with a hint, exit 1', { timeout: 60_000 }, async () => {
    const result = await runCli(['topics', '--group', 'demo'], envFor(svc, 'bob', { GROUPWIRE_CA_FILE: '' }));
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('GROUPWIRE_CA_FILE');
  });
});

describe('--help', () => {
  it('exits 0 with the usage of every command and subcommand', async () => {
    const commands = [[], ['api'], ['archive'], ['archive', 'download'], ['archive', 'search'], ['activity'], ['topics'], ['groups'], ['serve']];
    const results = await Promise.all(commands.map((command) => runCli([...command, '--help'], cleanEnv())));
    results.forEach((result, index) => {
      const name = ['groupwire', ...commands[index]!].join(' ');
      expect(result.code, name).toBe(0);
      expect(result.stdout.startsWith(`Usage: ${name === 'groupwire' ? 'groupwire <command>' : name}`), result.stdout).toBe(true);
    });
    expect(results[0]!.stdout).toMatch(/api .*\n.*groups .*\n.*archive .*\n.*activity .*\n.*topics /);
    expect(results[1]!.stdout).toContain('GROUPWIRE_TOKEN');
    const short = await runCli(['topics', '-h'], cleanEnv());
    expect(short.code).toBe(0);
    const api = await runCli(['api', 'getchats', '-h'], cleanEnv());
    expect(api.stdout).toContain('Usage: groupwire api');
  });
});

describe('secrets', () => {
  it('no password or token appeared in any output of this file', () => {
    expect(outputs.length).toBeGreaterThan(0);
    const all = outputs.join('\n');
    for (const secret of [...PASSWORDS, ...tokens]) expect(all).not.toContain(secret);
  });
});
