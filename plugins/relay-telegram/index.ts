import { definePlugin } from '../../src/index.js';
import { relayTelegramOptions, relayTelegramWarnings } from './options.js';
import { TelegramRelay } from './relay.js';

/**
 * Telegram relay, a gateway endpoint: gateway lines to Telegram groups, supergroups, forum topics and
 * channels as plain text `<name> text` (no parse_mode: nothing in a line is formatting), Telegram
 * messages and edits to the gateways, on grammY's Bot API client with the relay's own getUpdates
 * loop and a persisted update offset. See docs/plugins/relay-telegram.md.
 */
export default definePlugin({
  name: 'relay-telegram',
  options: relayTelegramOptions,
  warnings: relayTelegramWarnings,
  platform: {
    name: 'telegram',
    // Each `chats:` pair is a gateway of a chat and a Telegram chat (or forum topic), both ways.
    channels: (options) => Object.entries(options.chats).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
  },
  create(options, env) {
    return new TelegramRelay(options, env).instance();
  },
});
