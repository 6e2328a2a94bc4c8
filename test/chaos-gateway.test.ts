import { afterAll, describe, test } from 'vitest';
import { chaosSeed } from './helpers/chaos.js';
import { gatewayChaos } from './helpers/chaos-gateway-check.js';
import { SlackSide } from './helpers/chaos-slack-side.js';

/**
 * The chaos suite's gateway run: one bot whose chat `general` is in a gateway with an IRC channel
 * (a real inspircd) and a Slack channel (the fake Slack). People on all three sides say 1,000 lines
 * each, in bursts, while every chat socket is dropped again and again, Slack drops or refreshes the
 * relay's socket, the IRC server is killed and comes back, and the bot itself is killed (SIGKILL) and
 * started again. Each side must then have every line of the two others once, in the order it was
 * said, and none of its own. The one exception: a line on its way to IRC when the IRC server itself
 * was killed may come twice (the server died with its confirmation, and with the history that could
 * tell). See docs/chaos.md "The gateway run"; replay with CHAOS_SEED=<seed>. The other platforms'
 * run is test/chaos-gateway-platforms.test.ts.
 */

const seed = chaosSeed();
const started: Array<{ close(): unknown }> = [];

afterAll(async () => {
  for (const piece of started.reverse()) await piece.close();
});

describe('chaos: a gateway', () => {
  test(`3,000 lines from chat, IRC and Slack through socket drops, an IRC server kill and a bot kill: 0 lost, 0 echoed, in order, 0 doubled but what the killed IRC server had in flight (seed ${seed})`, { timeout: 150_000 }, async ({ onTestFailed }) => {
    const slack = await SlackSide.start();
    started.push(slack);
    await gatewayChaos(started, { name: 'chaos-gateway', seed, platforms: [slack], perSide: 1_000, talkingMs: 28_000, cutsPerPlatform: 3, onFailure: (dump) => onTestFailed(dump) });
  });
});
