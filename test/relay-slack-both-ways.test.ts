import { afterEach, describe, expect, test } from 'vitest';
import { post, probes, waitFor } from './helpers/supervisor.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';
import { BOT } from './fakes/slack/index.js';

/** The relay in a supervisor against the local service and a fake Slack: chat → Slack and Slack → chat. */

let setup: RelaySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

describe('relay-slack: both ways', () => {
  test('chat messages go to their Slack channel with the speaker\'s name; Slack messages come into the chat as <name> text', async () => {
    setup = await relaySetup({ after: (env) => [{ use: env.probe('after'), with: { key: 'both' } }] });
    const { env, slack } = setup;
    await setup.start();
    await setup.connections(1);

    await post(env.svc, 'general', 'bob', 'hello Slack');
    await post(env.svc, 'random', 'carol', 'over in random');
    await waitFor('two posts in Slack', () => slack.posts.length === 2);
    const [general, random] = slack.posts;
    expect(general).toMatchObject({ channel: 'C0GENERAL1', text: 'hello Slack', username: 'Bob Member' });
    expect(general!.args).toMatchObject({ parse: 'none', link_names: 'false', unfurl_links: 'false', unfurl_media: 'false' });
    expect(random).toMatchObject({ channel: 'C0RANDOM01', text: 'over in random' });
    // The relay called next(): the plugin after it saw both messages.
    expect(probes().seen.both!.map((s) => s.text)).toEqual(['hello Slack', 'over in random']);

    slack.message('C0GENERAL1', 'U0ALICE001', 'hi from <#C0RANDOM01|random>, see <https://example.com/a?b=1&amp;c=2|the docs> &amp; <https://example.org>');
    slack.message('C0RANDOM01', 'U0BOB00001', 'ping <@U0ALICE001> and <@U0NOBODY1>: 1 &lt; 2 &gt; 0');
    await waitFor('the Slack messages in the chats', async () => (await setup!.relayed('general')).length === 1 && (await setup!.relayed('random')).length === 1);
    expect(await setup.relayed('general')).toEqual(['<alice.l> hi from #random, see the docs (https://example.com/a?b=1&c=2) & https://example.org']);
    // A user without a display name shows by real name; an unknown user by id.
    expect(await setup.relayed('random')).toEqual(['<Bob Builder> ping @alice.l and @U0NOBODY1: 1 < 2 > 0']);

    // Slack echoed the relay's own two posts (bot_message, its bot_id): acknowledged, not relayed back.
    expect(slack.socket.sent.filter((e) => e.payload.event.bot_id === BOT.botId)).toHaveLength(2);
    await setup.drained();
    const stats = setup.stats();
    expect(stats).toMatchObject({ relayed_out: 2, relayed_in: 2, queued: 0, failed: 0, disabled: 0 });
    expect(stats.ignored).toBeGreaterThanOrEqual(2);
    await waitFor('every envelope acknowledged', () => slack.acks.length === slack.socket.sent.length);
    expect(new Set(slack.acks).size).toBe(slack.acks.length);
    // users.info was asked once per user (cached).
    expect(slack.api.calls.filter((c) => c.method === 'users.info' && c.args.user === 'U0ALICE001')).toHaveLength(1);
    expect(slack.api.calls.find((c) => c.method === 'auth.test')).toMatchObject({ status: 200 });
  });
});
