import type { ChannelMap } from './channels.js';
import type { Envelope } from './socket.js';

/** A Slack message taken in, waiting (durably) to be posted into its chats. */
export interface InboundItem {
  channel: string;
  user: string;
  text: string;
  ts: string;
  files?: Array<{ name?: string; title?: string; permalink?: string }>;
}

/** Who the relay is in Slack (auth.test, and the app of the envelopes), to recognise its own posts. */
export interface SlackSelf {
  userId?: string;
  botId?: string;
}

interface MessageEvent {
  type?: string;
  subtype?: string;
  hidden?: boolean;
  channel?: string;
  user?: string;
  bot_id?: string;
  bot_profile?: unknown;
  app_id?: string;
  text?: string;
  ts?: string;
  files?: Array<{ name?: string; title?: string; permalink?: string }>;
}

interface EventCallback {
  type?: string;
  event_id?: string;
  api_app_id?: string;
  event?: MessageEvent;
}

/** Message subtypes that are new messages; everything else (edits, deletions, joins, topics, bots) is not relayed. */
const NEW_MESSAGE_SUBTYPES = new Set([undefined, 'me_message', 'thread_broadcast', 'file_share']);

export type Admission = { item: InboundItem; keys: string[] } | { ignored: string };

/**
 * Decides, without any I/O, whether an envelope carries a Slack message to relay: an `events_api`
 * envelope with a `message` event that is a new message by a person (no bot_id, not the relay's own
 * user or app) in a channel that may be mapped. `keys` (event id, channel+ts) are what duplicates share.
 */
export function admit(envelope: Pick<Envelope, 'type' | 'body'>, self: SlackSelf, channels: ChannelMap): Admission {
  if (envelope.type !== 'events_api') return { ignored: `envelope ${envelope.type}` };
  const body = (envelope.body ?? {}) as EventCallback;
  const event = body.event;
  if (!event || event.type !== 'message') return { ignored: `event ${event?.type ?? 'missing'}` };
  if (!NEW_MESSAGE_SUBTYPES.has(event.subtype) || event.hidden) return { ignored: `subtype ${event.subtype ?? 'hidden'}` };
  if (event.bot_id || event.bot_profile) return { ignored: event.bot_id === self.botId ? 'own post' : 'a bot' };
  if (!event.user) return { ignored: 'no user' };
  if (event.user === self.userId || (event.app_id !== undefined && event.app_id === body.api_app_id)) return { ignored: 'own post' };
  if (!event.channel || !event.ts) return { ignored: 'no channel or ts' };
  if (!channels.mightMap(event.channel)) return { ignored: 'channel not mapped' };
  const item: InboundItem = { channel: event.channel, user: event.user, text: event.text ?? '', ts: event.ts };
  if (event.files?.length) item.files = event.files.map(({ name, title, permalink }) => ({ name, title, permalink }));
  const keys = [`m:${event.channel}:${event.ts}`];
  if (body.event_id) keys.push(`e:${body.event_id}`);
  return { item, keys };
}
