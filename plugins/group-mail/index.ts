import { definePlugin } from '../../src/index.js';
import { MailEndpoint } from './mail-endpoint.js';
import { groupMailOptions, moderationChannel } from './options.js';

/**
 * The group's mail side as a gateway endpoint: new topics (or every message, replies threaded under
 * their topic) of a group's archive, and optionally its activity log's moderation entries, handed to
 * the gateways once and in order from a durable cursor by adaptive polling; with `post_to_group`, lines
 * from the other sides posted into the group through drafts, never twice. See docs/plugins/group-mail.md.
 */
export default definePlugin({
  name: 'group-mail',
  options: groupMailOptions,
  platform: {
    name: 'mail',
    // Each `groups:` pair is a gateway of a chat and a group's archive (and of its activity log, with `moderation`).
    channels: (options) => Object.entries(options.groups).flatMap(([chat, group]) => [
      { chat, channel: group, direction: options.post_to_group ? 'inout' as const : 'in' as const },
      ...(options.moderation.length > 0 ? [{ chat, channel: moderationChannel(group), direction: 'in' as const }] : []),
    ]),
    // The service finds groups by name whatever their case.
    channelKey: (channel) => channel.toLowerCase(),
    refusesOut: (options, channel) => channel.endsWith('/moderation') ? 'nothing can be posted into an activity log'
      : options.post_to_group ? undefined : 'group-mail posts into a group only with post_to_group: true',
  },
  create(options, env) {
    return new MailEndpoint(options, env).instance();
  },
});
