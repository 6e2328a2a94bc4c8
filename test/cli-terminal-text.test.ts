import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFor, runCli, succeeded } from './helpers/cli.js';
import { admin, startTestService, type TestService } from './helpers/service.js';
import { expectLinearOnAdversarialText } from './helpers/adversarial-text.js';
import { terminalBlock, terminalJson, terminalText } from '../src/cli/terminal-text.js';

/**
 * Text from the service reaches the terminal with its controls shown as codes (issue #31 item 10). The
 * local service refuses such text through its API; another service may not, so it is put in through the
 * admin API, as a remote service would hand it over.
 */

let svc: TestService;

/** A window-title change, a screen clear, a bell and a right-to-left override. */
const SUBJECT = 'Plans \x1b]0;pwned\x07 and \x1b[2J cleared \u202egnp.exe';
const NAME = 'Eve \x07Bell\u2066';
const BODY = 'first line \x07 rings\nsecond \x1b[31mred\x1b[0m line \u202eevil';
const GROUP_TITLE = 'Hostile \x1b]0;title\x07 group';

function expectNoRawControls(output: string): void {
  // Nothing but line feeds from the CLI's own layout: no ESC, BEL, CR, C1 or bidi control.
  expect(output).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
}

beforeAll(async () => {
  svc = await startTestService();
  const ok = async (path: string, body: unknown) => {
    const answer = await admin(svc, path, body);
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.text}`);
    return answer;
  };
  await ok('users', { email: 'eve@example.com', password: 'eve-password-1', full_name: NAME });
  await ok('subscriptions', { group: 'demo', user: 'eve@example.com', role: 'member' });
  await ok('topics', { group: 'demo', user: 'eve@example.com', subject: SUBJECT, body: BODY });
  await ok('groups', { name: 'hostile', title: GROUP_TITLE, members: [{ email: 'bob@example.com' }] });
});
afterAll(async () => {
  await svc?.close();
});

describe('service text on the terminal', () => {
  it('topics: the subject and the name show their controls as codes', async () => {
    const out = succeeded(await runCli(['topics', '--group', 'demo'], envFor(svc, 'bob')));
    expectNoRawControls(out);
    expect(out).toContain('Plans \\u{1b}]0;pwned\\u{7} and \\u{1b}[2J cleared \\u{202e}gnp.exe');
    expect(out).toContain('(Eve \\u{7}Bell\\u{2066})');
  });

  it('archive search: subject, name and the body\'s summary show their controls as codes', async () => {
    const out = succeeded(await runCli(['archive', 'search', '--group', 'demo', 'rings'], envFor(svc, 'bob')));
    expectNoRawControls(out);
    expect(out).toContain('\\u{1b}]0;pwned\\u{7}');
    expect(out).toContain('Eve \\u{7}Bell');
    expect(out).toMatch(/rings/);
  });

  it('activity: the entry naming the subject shows its controls as codes', async () => {
    const out = succeeded(await runCli(['activity', '--group', 'demo'], envFor(svc, 'mo')));
    expectNoRawControls(out);
    expect(out).toContain('\\u{1b}[2J');
  });

  it('groups: the group\'s title shows its controls as codes', async () => {
    const out = succeeded(await runCli(['groups'], envFor(svc, 'bob')));
    expectNoRawControls(out);
    expect(out).toContain('Hostile \\u{1b}]0;title\\u{7} group');
  });

  it('--json and api stay JSON that reads back as the service\'s text, with nothing raw in it', async () => {
    for (const args of [['topics', '--group', 'demo', '--json'], ['api', 'gettopics', '--group_name', 'demo']]) {
      const out = succeeded(await runCli(args, envFor(svc, 'bob')));
      expectNoRawControls(out.replace(/\n/g, ''));
      const list = JSON.parse(out) as { data: { subject: string; name: string }[] };
      expect(list.data.map((topic) => topic.subject)).toContain(SUBJECT);
      expect(list.data.map((topic) => topic.name)).toContain(NAME);
    }
  });
});

describe('terminal-text: linear on 1 MiB of adversarial text', () => {
  it('terminalText, terminalBlock and terminalJson', () => {
    expectLinearOnAdversarialText(terminalText);
    expectLinearOnAdversarialText(terminalBlock);
    expectLinearOnAdversarialText(terminalJson);
  });
});
