import { definePlugin } from '../../src/index.js';
import { relayMatrixOptions } from './options.js';
import { MatrixRelay } from './relay.js';

/**
 * Matrix relay, a gateway endpoint: gateway lines to Matrix rooms as `name: text` notices (the name
 * bold in the HTML body, everything escaped, nobody mentioned, a txnId from the line's key so a retry
 * posts once), room messages, emotes, edits, replies and redactions to the gateways, files both ways
 * through the homeserver's media API (authenticated download, upload + m.image/m.file), on matrix-js-sdk
 * with the relay's own persisted /sync loop. See docs/plugins/relay-matrix.md.
 */
export default definePlugin({
  name: 'relay-matrix',
  options: relayMatrixOptions,
  platform: {
    name: 'matrix',
    // Each `rooms:` pair is a gateway of a chat and a room (as written: id or alias), both ways.
    channels: (options) => Object.entries(options.rooms).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
  },
  create(options, env) {
    return new MatrixRelay(options, env).instance();
  },
});
