import { definePlugin } from '../../src/index.js';
import { relayMattermostOptions } from './options.js';
import { MattermostRelay } from './relay.js';

/**
 * Mattermost relay, a gateway endpoint: gateway lines to Mattermost channels under their speakers'
 * names (`override_username`, where the server allows it) or as `**name**: text`, markdown escaped and
 * nobody mentioned, a `pending_post_id` and a history look-up so a retry posts once; Mattermost posts,
 * edits, deletions and thread replies to the gateways, with a catch-up by REST after each websocket
 * hello. On the official @mattermost/client (Client4). See docs/plugins/relay-mattermost.md.
 */
export default definePlugin({
  name: 'relay-mattermost',
  options: relayMattermostOptions,
  platform: {
    name: 'mattermost',
    // Each `channels:` pair is a gateway of a chat and a channel (as written: id or team/channel), both ways.
    channels: (options) => Object.entries(options.channels).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
  },
  create(options, env) {
    return new MattermostRelay(options, env).instance();
  },
});
