import { afterAll, describe, test } from 'vitest';
import { chaosSeed } from './helpers/chaos.js';
import { DiscordSide } from './helpers/chaos-discord-side.js';
import { gatewayChaos } from './helpers/chaos-gateway-check.js';
import { MatrixSide } from './helpers/chaos-matrix-side.js';
import { XmppSide } from './helpers/chaos-xmpp-side.js';
import { ZulipSide } from './helpers/chaos-zulip-side.js';

/**
 * The gateway chaos run for the other platforms (docs/chaos.md "The gateway run"): one gateway of the
 * chat, an IRC channel (inspircd) and a channel of Discord (the local Discord), Matrix, XMPP and Zulip (a stream's topic); the HTTP API,
 * Telegram and Mattermost have a run of their own (chaos-gateway-platforms-2.test.ts), so the two runs go
 * side by side in two workers and neither grows with every platform added.
 * Every side's people say 150 lines in bursts while chat sockets drop, each platform cuts the relay's
 * connection its own ways, the IRC server is killed and the bot is killed (SIGKILL). Each side must
 * then have every line of every other side once, in order, and none of its own. Replay with
 * CHAOS_SEED=<seed>.
 */

const seed = chaosSeed();
const started: Array<{ close(): unknown }> = [];

afterAll(async () => {
  for (const piece of started.reverse()) await piece.close();
});

describe('chaos: a gateway of Discord, Matrix, XMPP and Zulip', () => {
  test(`150 lines from each side (chat, IRC, Discord, Matrix, XMPP, Zulip) through connection cuts, an IRC server kill and a bot kill: 0 lost, 0 echoed, in order, 0 doubled but what the killed IRC server had in flight (seed ${seed})`, { timeout: 150_000 }, async ({ onTestFailed }) => {
    const platforms = [await DiscordSide.start(), await MatrixSide.start(), await XmppSide.start(), await ZulipSide.start()];
    started.push(...platforms);
    await gatewayChaos(started, { name: 'chaos-gateway-platforms', seed, platforms, perSide: 150, talkingMs: 8_000, cutsPerPlatform: 2, settleMs: 90_000, onFailure: (dump) => onTestFailed(dump) });
  });
});
