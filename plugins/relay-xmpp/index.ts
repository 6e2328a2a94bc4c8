import { definePlugin } from '../../src/index.js';
import { relayXmppOptions } from './options.js';
import { XmppRelay } from './relay.js';

/**
 * XMPP relay, a gateway endpoint: gateway lines into multi-user chat rooms as `<name> text` (one
 * origin-id per line, so a resend is recognised), room messages, corrections and retractions to the
 * gateways, with the room's archive (MAM) read after every new session; files through the server's own
 * HTTP Upload service (XEP-0363, with OOB) both ways; on @xmpp/client. See docs/plugins/relay-xmpp.md.
 */
export default definePlugin({
  name: 'relay-xmpp',
  options: relayXmppOptions,
  platform: {
    name: 'xmpp',
    // Each `rooms:` pair is a gateway of a chat and a room, both ways.
    channels: (options) => Object.entries(options.rooms).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
    // JIDs' local and domain parts compare without case (nodeprep/nameprep, for what a room name holds).
    channelKey: (channel) => channel.toLowerCase(),
  },
  create(options, env) {
    return new XmppRelay(options, env).instance();
  },
});
