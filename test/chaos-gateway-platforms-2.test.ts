import { afterAll, describe, test } from 'vitest';
import { chaosSeed } from './helpers/chaos.js';
import { gatewayChaos } from './helpers/chaos-gateway-check.js';
import { HttpSide } from './helpers/chaos-http-side.js';
import { MattermostSide } from './helpers/chaos-mattermost-side.js';
import { RocketchatSide } from './helpers/chaos-rocketchat-side.js';
import { TelegramSide } from './helpers/chaos-telegram-side.js';

/**
 * The gateway chaos run for the other platforms (docs/chaos.md "The gateway run"): one gateway of the
 * chat, an IRC channel (inspircd), the HTTP API, Telegram (the local Bot API), Mattermost and Rocket.Chat
 * (their local fakes); Discord, Matrix and XMPP are in chaos-gateway-platforms.test.ts (two runs side by side).
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

describe('chaos: a gateway of the HTTP API, Telegram, Mattermost and Rocket.Chat', () => {
  test(`150 lines from each side (chat, IRC, HTTP, Telegram, Mattermost, Rocket.Chat) through connection cuts, an IRC server kill and a bot kill: 0 lost, 0 echoed, in order, 0 doubled but what the killed IRC server (or Telegram, at the bot's kill) had in flight (seed ${seed})`, { timeout: 150_000 }, async ({ onTestFailed }) => {
    const platforms = [await HttpSide.start(), await TelegramSide.start(), await MattermostSide.start(), await RocketchatSide.start()];
    started.push(...platforms);
    await gatewayChaos(started, { name: 'chaos-gateway-platforms-2', seed, platforms, perSide: 150, talkingMs: 8_000, cutsPerPlatform: 2, settleMs: 90_000, onFailure: (dump) => onTestFailed(dump) });
  });
});
