import { afterEach, describe, expect, test } from 'vitest';
import { post, waitFor } from './helpers/supervisor.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';
import { BOT } from './fakes/slack/index.js';

/**
 * relay-slack in a bots.yaml gateway of chat general and two Slack channels (one by id, one by name;
 * the relay's own `channels:` empty): what is said in one channel reaches the chat and the other
 * channel through the chat; a thread reply lands in the thread of its parent's copy; an edit updates
 * the copy (chat.update), a deletion deletes it (chat.delete), also after a restart; the relay's own
 * posts, updates and deletions that Slack sends back are never relayed.
 */

let setup: RelaySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

const GENERAL = 'C0GENERAL1';
const RANDOM = 'C0RANDOM01';

async function gatewaySetup(): Promise<RelaySetup> {
  return relaySetup({
    with: { channels: {} },
    gateways: [{ name: 'lobby', endpoints: [{ chat: 'general' }, { slack: GENERAL }, { slack: '#random' }] }],
  });
}

describe('relay-slack in a gateway: threads, edits, deletions', () => {
  test('a Slack message reaches the chat and the other channel; its thread reply, edit and deletion follow it', { timeout: 60_000 }, async () => {
    setup = await gatewaySetup();
    const { env, slack } = setup;
    await setup.start();
    await setup.connections(1);
    const inRandom = () => slack.posts.filter((p) => p.channel === RANDOM);

    const parent = slack.message(GENERAL, 'U0ALICE001', 'the plan is <https://example.com|here>');
    const parentTs = parent.payload.event.ts as string;
    await waitFor('the copy in #random', () => inRandom().length === 1);
    expect(inRandom()[0]).toMatchObject({ text: 'the plan is here (https://example.com)', username: 'alice.l' });
    expect(inRandom()[0]!.thread_ts).toBeUndefined();
    const copyTs = inRandom()[0]!.ts;

    slack.threadReply(GENERAL, 'U0BOB00001', 'sounds good', parentTs);
    await waitFor('the reply in #random', () => inRandom().length === 2);
    // In the thread of the parent's copy; the chat, which has no threads, shows a quote.
    expect(inRandom()[1]).toMatchObject({ text: 'sounds good', username: 'Bob Builder', thread_ts: copyTs });
    expect(slack.api.thread(RANDOM, copyTs).map((m) => m.text)).toEqual(['sounds good']);

    slack.messageChanged(GENERAL, parentTs, 'the plan is <https://example.org|there>');
    await waitFor('the copy updated', () => slack.api.changes.length === 1);
    expect(slack.api.changes[0]).toMatchObject({ method: 'chat.update', channel: RANDOM, ts: copyTs, text: 'the plan is there (https://example.org)' });
    expect(slack.api.message(RANDOM, copyTs)!.text).toBe('the plan is there (https://example.org)');

    slack.messageDeleted(GENERAL, parentTs);
    await waitFor('the copy deleted', () => slack.api.changes.length === 2);
    expect(slack.api.changes[1]).toMatchObject({ method: 'chat.delete', channel: RANDOM, ts: copyTs });
    expect(slack.api.message(RANDOM, copyTs)).toBeUndefined();

    await waitFor('four lines in the chat', async () => (await setup!.relayed('general')).length >= 4);
    const lines = await setup.relayed('general');
    expect(lines.slice(0, 3)).toEqual([
      '<alice.l> the plan is here (https://example.com)',
      '> alice.l: the plan is here (https://example.com)\n<Bob Builder> sounds good',
      '(edit) <alice.l> the plan is there (https://example.org)',
    ]);
    // The notice quotes what was last said before the deletion: the edit.
    expect(lines[3]).toBe('* alice.l deleted a message: "the plan is there (https://example.org)"');

    // A member's chat message goes to both channels, once each.
    await post(env.svc, 'general', 'carol', 'from the chat');
    await waitFor('the chat line in both channels', () => slack.posts.filter((p) => p.text === 'from the chat').length === 2);
    await setup.drained();
    expect(slack.posts.filter((p) => p.text === 'from the chat').map((p) => p.channel).sort()).toEqual([GENERAL, RANDOM]);

    // Slack sent back the relay's own posts, its update and its deletion: none came into the chat again.
    const echoes = slack.socket.sent.filter((e) => e.payload.event.bot_id === BOT.botId || (e.payload.event.previous_message as { bot_id?: string } | undefined)?.bot_id === BOT.botId);
    expect(echoes.length).toBeGreaterThanOrEqual(5);
    await waitFor('every envelope acknowledged', () => slack.acks.length === slack.socket.sent.length);
    expect(await setup.relayed('general')).toHaveLength(4);
    expect(setup.stats()).toMatchObject({ relayed_in: 4, relayed_out: 4, edited_out: 1, deleted_out: 1, failed: 0 });
  });

  test('after a restart an edit still finds the copy, in a channel given by name', { timeout: 60_000 }, async () => {
    setup = await gatewaySetup();
    const { slack } = setup;
    const first = await setup.start();
    await setup.connections(1);
    const said = slack.message(GENERAL, 'U0ALICE001', 'before the restart');
    await waitFor('the copy in #random', () => slack.posts.some((p) => p.channel === RANDOM));
    await setup.drained();
    await first.stop();

    await setup.start();
    await setup.connections(2);
    slack.messageChanged(GENERAL, said.payload.event.ts as string, 'edited after the restart');
    await waitFor('the copy updated', () => slack.api.changes.length === 1);
    expect(slack.api.changes[0]).toMatchObject({ method: 'chat.update', channel: RANDOM, text: 'edited after the restart' });
    expect(slack.posts.filter((p) => p.channel === RANDOM)).toHaveLength(1);
  });
});
