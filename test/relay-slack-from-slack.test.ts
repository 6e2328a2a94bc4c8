import { afterEach, describe, expect, test } from 'vitest';
import { waitFor } from './helpers/supervisor.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';

/** Slack → chat: what is relayed and what is not, duplicates, reconnects mid-stream, acknowledgements. */

let setup: RelaySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

/**
 * Every event got an acknowledged envelope, and no envelope was acknowledged twice. (An envelope sent
 * on a socket that was then cut may never reach the relay; Slack sends it again, and that one is acked.)
 */
async function allAcked(setup: RelaySetup): Promise<void> {
  const { slack } = setup;
  const acked = () => new Set(slack.socket.sent.filter((e) => slack.acks.includes(e.envelope_id)).map((e) => e.payload.event_id));
  const events = () => new Set(slack.socket.sent.map((e) => e.payload.event_id));
  await waitFor('every event acknowledged', () => acked().size === events().size && slack.socket.pendingCount === 0);
  expect(slack.acks).toHaveLength(new Set(slack.acks).size);
  expect(slack.acks.every((id) => slack.socket.sent.some((e) => e.envelope_id === id))).toBe(true);
}

describe('relay-slack: Slack to chat', () => {
  test('only new messages by people in mapped channels are relayed; every envelope is acknowledged once', async () => {
    setup = await relaySetup();
    const { slack } = setup;
    await setup.start();
    await setup.connections(1);
    const general = 'C0GENERAL1';
    slack.message(general, 'U0ALICE001', 'one');
    slack.message(general, 'U0ALICE001', 'by another bot', { bot_id: 'B0OTHER001', subtype: 'bot_message' });
    slack.message(general, 'U0ALICE001', 'by another app as a user', { bot_id: 'B0OTHER001' });
    slack.message(general, 'U0RELAYBOT', 'by the relay\'s own user');
    slack.event({ type: 'message', subtype: 'message_changed', channel: general, hidden: true, ts: '1.000001', message: { text: 'edited' } });
    slack.event({ type: 'message', subtype: 'message_deleted', channel: general, hidden: true, ts: '1.000002', deleted_ts: '1.0' });
    slack.message(general, 'U0BOB00001', '<@U0BOB00001> has joined the channel', { subtype: 'channel_join' });
    slack.message(general, 'U0BOB00001', 'set the topic', { subtype: 'channel_topic' });
    slack.message('C0ELSEWHER', 'U0ALICE001', 'in a channel that is not mapped');
    slack.message('D0DIRECT01', 'U0ALICE001', 'a direct message', { channel_type: 'im' });
    slack.event({ type: 'reaction_added', user: 'U0ALICE001', reaction: 'tada', item: { type: 'message', channel: general, ts: '1.0' } });
    slack.message(general, 'U0ALICE001', 'waves', { subtype: 'me_message' });
    slack.message(general, 'U0BOB00001', 'a reply in a thread', { thread_ts: '1.000001' });
    slack.message(general, 'U0BOB00001', 'have a look', { subtype: 'file_share', files: [{ name: 'a.png', title: 'A picture', permalink: 'https://fake.slack.com/files/a' }] });
    slack.message(general, 'U0ALICE001', 'two');
    await waitFor('the relayed messages', async () => (await setup!.relayed('general')).length >= 5);
    await allAcked(setup);
    expect(await setup.relayed('general')).toEqual([
      // A /me is an action (the core shows `* name text`); a reply to a message the map does not know is a plain line;
      // the file goes to the gateway as a file, read through Slack's file API (relay-slack-files.test.ts): this
      // one has no download URL (a file Slack hides, or an item of an older version), so it is not relayed and says so.
      '<alice.l> one', '* alice.l waves', '<Bob Builder> a reply in a thread',
      '<Bob Builder> have a look\n<Bob Builder> [a file was not relayed: a.png: could not be read]', '<alice.l> two',
    ]);
    expect(setup.stats()).toMatchObject({ relayed_in: 5, ignored: 10, failed: 0 });
  });

  test('a Slack retry of an event, or the same message again, is posted once — also across a reconnect', async () => {
    setup = await relaySetup();
    const { slack } = setup;
    await setup.start();
    await setup.connections(1);
    const first = slack.message('C0GENERAL1', 'U0ALICE001', 'only once');
    slack.socket.resend(first);
    slack.socket.resend(first);
    // The same channel and ts under another event id (delivered twice by Slack).
    slack.message('C0GENERAL1', 'U0ALICE001', 'only once', { ts: first.payload.event.ts });
    await waitFor('the message', async () => (await setup!.relayed('general')).length === 1);
    slack.socket.disconnect('refresh_requested');
    await setup.connections(2);
    slack.socket.resend(first);
    slack.message('C0GENERAL1', 'U0BOB00001', 'marker');
    await waitFor('the marker', async () => (await setup!.relayed('general')).length === 2);
    expect(await setup.relayed('general')).toEqual(['<alice.l> only once', '<Bob Builder> marker']);
    await allAcked(setup);
    expect(slack.socket.sent.filter((e) => e.payload.event_id === first.payload.event_id).length).toBe(4);
  });

  test('Socket Mode disconnects (refresh_requested, warning) and dropped sockets mid-stream lose nothing and repeat nothing', { timeout: 60_000 }, async () => {
    setup = await relaySetup();
    const { slack } = setup;
    await setup.start();
    await setup.connections(1);
    const texts: string[] = [];
    const say = (count: number) => {
      for (let i = 0; i < count; i += 1) {
        const text = `line ${texts.length + 1}`;
        texts.push(text);
        slack.message('C0GENERAL1', 'U0ALICE001', text);
      }
    };
    say(3);
    slack.socket.disconnect('refresh_requested');
    say(3); // held by Slack until the relay is connected again
    await setup.connections(2);
    say(2);
    slack.socket.drop();
    say(2);
    await setup.connections(3);
    say(1);
    slack.socket.disconnect('warning');
    say(1);
    await setup.connections(4);
    say(2);
    await waitFor('every line', async () => (await setup!.relayed('general')).length >= texts.length, 30_000);
    expect(await setup.relayed('general')).toEqual(texts.map((text) => `<alice.l> ${text}`));
    await allAcked(setup);
    expect(setup.stats()).toMatchObject({ relayed_in: texts.length, reconnects: 3, failed: 0 });
    expect(slack.api.calls.filter((c) => c.method === 'apps.connections.open' && c.status === 200)).toHaveLength(4);
  });

  test('a failing apps.connections.open while reconnecting is retried, not fatal', { timeout: 60_000 }, async () => {
    setup = await relaySetup();
    const { slack } = setup;
    await setup.start();
    await setup.connections(1);
    slack.fault('apps.connections.open', { times: 1, status: 503 });
    slack.rateLimit('apps.connections.open', 1, 1);
    slack.socket.drop();
    slack.message('C0GENERAL1', 'U0ALICE001', 'after the outage');
    await waitFor('the message', async () => (await setup!.relayed('general')).length === 1, 30_000);
    expect(slack.api.calls.filter((c) => c.method === 'apps.connections.open').map((c) => c.status)).toEqual([200, 503, 429, 200]);
    expect(slack.api.early).toEqual({});
    expect(setup.stats()).toMatchObject({ disabled: 0, reconnects: 1 });
  });

  test('Slack names and text cannot inject anything: names lose their brackets, entities unescape once', async () => {
    setup = await relaySetup();
    const { slack } = setup;
    await setup.start();
    await setup.connections(1);
    slack.message('C0RANDOM01', 'U0MALLORY1', '&amp;lt;!channel&amp;gt; and &lt;b&gt; and <!channel> <!subteam^S1|@devs> <!date^1392734382^{date}|Feb 18> <mailto:a@b.example|a@b.example>');
    await waitFor('the message', async () => (await setup!.relayed('random')).length === 1);
    expect(await setup.relayed('random')).toEqual(['<Mallory !channel> &lt;!channel&gt; and <b> and @channel @devs Feb 18 a@b.example']);
    // #random is mapped by name: its id was found with conversations.info.
    expect(slack.api.calls.some((c) => c.method === 'conversations.info' && c.args.channel === 'C0RANDOM01')).toBe(true);
  });
});
