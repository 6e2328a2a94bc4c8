import { definePlugin } from '../../src/index.js';
import { relayZulipOptions } from './options.js';
import { ZulipRelay } from './relay.js';

/**
 * Zulip relay, a gateway endpoint: gateway lines to Zulip stream topics as `**name**: text` (a Zulip bot
 * cannot post as someone else), markdown escaped and nobody mentioned, each send tied to its message by
 * its event queue's echo and found again by a history look-up after a kill; Zulip messages, edits and
 * deletions to the gateways through an event queue per stream, caught up from the stream's history
 * after each register. On a thin client of Zulip's REST API over undici. See docs/plugins/relay-zulip.md.
 */
export default definePlugin({
  name: 'relay-zulip',
  options: relayZulipOptions,
  platform: {
    name: 'zulip',
    // Each `streams:` pair is a gateway of a chat and a stream's topic (or a whole stream), both ways.
    channels: (options) => Object.entries(options.streams).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
  },
  create(options, env) {
    return new ZulipRelay(options, env).instance();
  },
});
