import { definePlugin } from '../../src/index.js';
import { relayRocketchatOptions } from './options.js';
import { RocketchatRelay } from './relay.js';

/**
 * Rocket.Chat relay, a gateway endpoint: gateway lines to Rocket.Chat rooms under their speakers'
 * names (`alias`, where the bot has message-impersonate) or as `**name**: text`, markdown escaped and
 * nobody mentioned, each message's `_id` made from its line so a retry sends it once; Rocket.Chat
 * messages, edits, deletions and thread replies to the gateways, by the realtime API with a catch-up
 * by REST history after each session. A thin client over undici and ws. See docs/plugins/relay-rocketchat.md.
 */
export default definePlugin({
  name: 'relay-rocketchat',
  options: relayRocketchatOptions,
  platform: {
    name: 'rocketchat',
    // Each `rooms:` pair is a gateway of a chat and a room (as written: id or #name), both ways.
    channels: (options) => Object.entries(options.rooms).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
  },
  create(options, env) {
    return new RocketchatRelay(options, env).instance();
  },
});
