import { definePlugin } from '../../src/index.js';
import { HttpApi } from './api.js';
import { httpApiOptions, httpApiWarnings } from './options.js';

/**
 * The HTTP API, a gateway endpoint for tools that speak only HTTP: messages in by
 * `POST /gateways/<channel>/messages` (bearer token or HMAC, Idempotency-Key, durably queued before the
 * 202), gateway lines out to signed webhooks (durable queues, retries, a dead-letter file) and as a
 * resumable event stream and poll per channel. See docs/plugins/http-api.md.
 */
export default definePlugin({
  name: 'http-api',
  options: httpApiOptions,
  warnings: httpApiWarnings,
  platform: {
    name: 'http',
    // Each `channels:` pair is a gateway of a chat and a channel name, both ways.
    channels: (options) => Object.entries(options.channels).map(([chat, channel]) => ({ chat, channel, direction: 'inout' as const })),
  },
  create(options, env) {
    return new HttpApi(options, env).instance();
  },
});
