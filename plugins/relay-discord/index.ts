import { definePlugin } from '../../src/index.js';
import { relayDiscordOptions } from './options.js';
import { DiscordRelay } from './relay.js';

/**
 * Discord relay, a gateway endpoint: gateway lines to Discord channels as `**name**: text` (mentions
 * defused, `allowed_mentions` empty, a nonce so a retry posts once), Discord messages, edits and
 * deletions to the gateways, on the official @discordjs/ws, @discordjs/rest and @discordjs/core. See
 * docs/plugins/relay-discord.md.
 */
export default definePlugin({
  name: 'relay-discord',
  options: relayDiscordOptions,
  platform: {
    name: 'discord',
    // Each `channels:` pair is a gateway of a chat and a Discord channel, both ways.
    channels: (options) => Object.entries(options.channels).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
  },
  create(options, env) {
    return new DiscordRelay(options, env).instance();
  },
});
