import { afterEach, describe, expect, test } from 'vitest';
import type { Message } from '../src/api/index.js';
import { adminOk, waitFor } from './helpers/supervisor.js';
import { EMAILS } from './helpers/service.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';

/**
 * Issue #31 items 13 and 14: group-mail announcing topics whose subject or body hold what the chat
 * refuses (BEL, ESC, DEL, NEL, NUL) or a right-to-left override, in a gateway with a chat and Slack
 * (the local service, the fake Slack). The admin endpoint stores subjects as mail from elsewhere may
 * bring them (the service's own `line` rule would refuse them at its API).
 */

let setup: RelaySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

const GENERAL = 'C0GENERAL1';
const RLO = '\u202e';
const PDF = '\u202c';

async function started(): Promise<RelaySetup> {
  const s = (setup = await relaySetup({
    with: { channels: {} },
    after: () => [{ use: 'group-mail', with: { poll: { min: '100ms', max: '400ms' } } }],
    gateways: [{ name: 'news', endpoints: [{ mail: 'demo', direction: 'in' }, { chat: 'general' }, { slack: GENERAL }] }],
  }));
  await s.start();
  await s.connections(1);
  await waitFor('the first reads of the archive', () => (s.env.supervisor!.stats() as any).bot0.plugins['group-mail'].polls >= 2);
  return s;
}

const topic = (s: RelaySetup, subject: string, body: string): Promise<{ topic: { id: string }; message: Message }> =>
  adminOk(s.env.svc, 'topics', { group: 'demo', user: EMAILS.alice, subject, body });

describe('group-mail: other people\'s text in an announcement', () => {
  test('a subject with BEL, ESC, DEL and NEL and a body with NUL and ESC: announced once, on one line, in the chat and in Slack (#31 item 13)', { timeout: 60_000 }, async () => {
    const s = await started();
    await topic(s, 'Budget\u0007 \u001b[31mred\u007f\u0085part two', 'Numbers\u0000 inside \u001b]0;pwned\u0007 today');
    await topic(s, 'Marker', 'after it');
    const inSlack = () => s.slack.posts.filter((p) => p.channel === GENERAL).map((p) => p.text);
    await waitFor('both topics in the chat', async () => (await s.relayed('general')).length >= 2, 20_000);
    await waitFor('both topics in Slack', () => inSlack().length >= 2, 20_000);
    const lines = await s.relayed('general');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^<Alice Owner> New topic: Budget \[31mred part two — Numbers inside \]0;pwned today https:\/\/\S+\/message\/\d+$/);
    expect(lines[1]).toMatch(/^<Alice Owner> New topic: Marker — after it /);
    expect(inSlack()[0]).toBe(lines[0]!.slice('<Alice Owner> '.length));
    expect((s.env.supervisor!.stats() as any).bot0.plugins['group-mail']).toMatchObject({ announced: 2 });
  });

  test('a right-to-left override in a subject and a snippet is closed before the next field and the link (#31 item 14)', { timeout: 60_000 }, async () => {
    const s = await started();
    await topic(s, `Invoice ${RLO}FDP.exe`, `see ${RLO}attached now`);
    await waitFor('the topic in the chat', async () => (await s.relayed('general')).length >= 1, 20_000);
    const [line] = await s.relayed('general');
    expect(line).toMatch(new RegExp(`^<Alice Owner> New topic: Invoice ${RLO}FDP\\.exe${PDF} — see ${RLO}attached now${PDF} https://\\S+/message/\\d+$`));
    await waitFor('the topic in Slack', () => s.slack.posts.some((p) => p.channel === GENERAL));
    expect(s.slack.posts.find((p) => p.channel === GENERAL)!.text).toBe(line!.slice('<Alice Owner> '.length));
  });
});
