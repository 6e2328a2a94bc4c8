import { afterEach, describe, expect, test } from 'vitest';
import { waitFor } from './helpers/supervisor.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';

/**
 * Slack → chat after the relay was away longer than Slack retries its events (the fake drops an event
 * no connection took within `giveUpAfterMs`, as Slack does after its third retry): the relay reads the
 * channel's history and its threads' replies from the last message it took, in small pages and through
 * a 429, and takes each message once, in order, also when the same message comes as a (retried) event.
 */

let setup: RelaySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

const GENERAL = 'C0GENERAL1';
const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';

describe('relay-slack: catch-up from history', () => {
  test('stopped longer than Slack retries: every message said meanwhile, threads included, reaches the chat once, in order', { timeout: 60_000 }, async () => {
    // Pages of 2 messages: the read pages through the history and a thread.
    setup = await relaySetup({ with: { catch_up: { requests_per_minute: 600, page_size: 2 } } });
    const { slack } = setup;
    slack.socket.giveUpAfterMs = 200;
    await setup.start();
    await setup.connections(1);
    const parent = slack.message(GENERAL, ALICE, 'before the stop').payload.event.ts as string;
    slack.threadReply(GENERAL, BOB, 'a reply before the stop', parent);
    // A message nobody had answered yet when the relay stopped: its thread is not among those it saw replies in.
    const unanswered = slack.message(GENERAL, BOB, 'not answered before the stop').payload.event.ts as string;
    await waitFor('the lines before the stop', async () => (await setup!.relayed('general')).length === 3);
    await setup.env.supervisor!.stop();

    // Said while the relay is away: in the channel, in the known thread, and a new thread.
    for (let n = 1; n <= 5; n += 1) slack.message(GENERAL, ALICE, `away ${n}`);
    slack.threadReply(GENERAL, BOB, 'a reply while away', parent);
    const newThread = slack.message(GENERAL, BOB, 'a new thread while away').payload.event.ts as string;
    const retried = slack.threadReply(GENERAL, ALICE, 'in the new thread', newThread);
    slack.threadReply(GENERAL, ALICE, 'the first answer, while away', unanswered);
    slack.message(GENERAL, 'U0RELAYBOT', 'a post by the relay itself', { bot_id: 'B0RELAY001' });
    await new Promise((done) => setTimeout(done, 300));
    // One history call is rate limited: the read waits Retry-After and goes on.
    slack.rateLimit('conversations.history', 1, 1);
    await setup.start();
    await setup.connections(2);
    // Slack sends one of them again (a retry with the same event id), after the read took it.
    await waitFor('the catch-up done', async () => (await setup!.relayed('general')).length >= 12);
    const again = slack.socket.resend(retried);
    await waitFor('the retry acknowledged', () => slack.acks.includes(again.envelope_id));
    slack.message(GENERAL, ALICE, 'live after the catch-up');
    await waitFor('the live line', async () => (await setup!.relayed('general')).includes('<alice.l> live after the catch-up'));

    const expected = [
      // A reply shows the message it answers (the core's rendering of a reply whose parent the map knows).
      '<alice.l> before the stop', '> alice.l: before the stop\n<Bob Builder> a reply before the stop', '<Bob Builder> not answered before the stop',
      ...[1, 2, 3, 4, 5].map((n) => `<alice.l> away ${n}`),
      '> alice.l: before the stop\n<Bob Builder> a reply while away', '<Bob Builder> a new thread while away',
      '> Bob Builder: a new thread while away\n<alice.l> in the new thread',
      '> Bob Builder: not answered before the stop\n<alice.l> the first answer, while away',
      '<alice.l> live after the catch-up',
    ];
    expect(await setup.relayed('general')).toEqual(expected);
    // Every event of the gap was dropped by Slack: all ten came from history.
    expect(slack.socket.expired.length).toBeGreaterThanOrEqual(10);
    expect(setup.stats()).toMatchObject({ failed: 0, rate_limited: 1 });
    // Nine of people's from history (the relay's own post is not kept by the fake's history); the retried event was seen already.
    expect(setup.stats().caught_up).toBe(9);
    expect(setup.stats().ignored).toBeGreaterThanOrEqual(1);
    // The figures for the closing note (asserted above).
    const away = expected.slice(3, -1);
    const relayed = await setup.relayed('general');
    process.stdout.write(`catch-up figures: Slack, stopped past its retries: ${away.length + 1} messages said while away (${away.length} by people, 4 of them in threads; 1 the relay's own), `
      + `${slack.socket.expired.length} events Slack dropped, ${relayed.filter((line) => away.includes(line)).length} recovered, ${setup.stats().caught_up} read from history, ${setup.stats().rate_limited} 429 waited out\n`);
  });

  test('a reconnect after a gap longer than after_gap_seconds reads the channel back: what Slack dropped arrives once, in order', { timeout: 30_000 }, async () => {
    setup = await relaySetup({ with: { catch_up: { after_gap_seconds: 0, requests_per_minute: 600 } } });
    const { slack } = setup;
    slack.socket.giveUpAfterMs = 200;
    await setup.start();
    await setup.connections(1);
    slack.message(GENERAL, ALICE, 'connected');
    await waitFor('the first line', async () => (await setup!.relayed('general')).length === 1);
    const callsBefore = setup.stats().catch_up_requests ?? 0;
    // The link drops and Socket Mode refuses two new connections: the relay is away for a few seconds.
    slack.fault('apps.connections.open', { times: 2, error: 'internal_error' });
    slack.socket.drop();
    for (let n = 1; n <= 3; n += 1) slack.message(GENERAL, BOB, `during the drop ${n}`);
    await setup.connections(2);
    await waitFor('the dropped lines', async () => (await setup!.relayed('general')).length === 4);
    expect(await setup.relayed('general')).toEqual(['<alice.l> connected', ...[1, 2, 3].map((n) => `<Bob Builder> during the drop ${n}`)]);
    expect(slack.socket.expired).toHaveLength(3);
    expect(setup.stats()).toMatchObject({ caught_up: 3, failed: 0, reconnects: 1 });
    expect(setup.stats().catch_up_requests).toBeGreaterThan(callsBefore);
  });
});
