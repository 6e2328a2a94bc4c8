import { definePlugin } from '../../src/index.js';
import { channelKey } from './channels.js';
import { relaySlackOptions } from './options.js';
import { SlackRelay } from './relay.js';

/**
 * Slack relay, a gateway endpoint: gateway lines to Slack channels (chat.postMessage with the
 * speaker's name and photo, threads, chat.update and chat.delete of its own posts), Slack messages,
 * edits and deletions to the gateways (Socket Mode), on the official @slack/web-api and
 * @slack/socket-mode. See docs/plugins/relay-slack.md.
 */
export default definePlugin({
  name: 'relay-slack',
  options: relaySlackOptions,
  platform: {
    name: 'slack',
    // Each `channels:` pair is a gateway of a chat and a Slack channel, both ways.
    channels: (options) => Object.entries(options.channels).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
    channelKey,
  },
  create(options, env) {
    return new SlackRelay(options, env).instance();
  },
});
