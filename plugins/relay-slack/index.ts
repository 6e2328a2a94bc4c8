import { definePlugin } from '../../src/index.js';
import { relaySlackOptions } from './options.js';
import { SlackRelay } from './relay.js';

/**
 * Slack relay: chat messages to Slack channels (chat.postMessage, with the speaker's name and photo),
 * Slack messages into the chats (Socket Mode), on the official @slack/web-api and @slack/socket-mode.
 * See docs/plugins/relay-slack.md.
 */
export default definePlugin({
  name: 'relay-slack',
  options: relaySlackOptions,
  timeoutMs: 5_000,
  create(options, env) {
    return new SlackRelay(options, env).instance();
  },
});
