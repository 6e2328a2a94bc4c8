import type { ChannelMap } from './channels.js';
import { keptFile, type SlackFile } from './files-in.js';
import type { Envelope } from './socket.js';

/**
 * Something said in Slack taken in, waiting (durably) to be handed to the gateways. Items queued by
 * versions before gateways have no `kind`: they are messages.
 */
export interface InboundItem {
  /** Absent: `message`. */
  kind?: 'message' | 'action' | 'edit' | 'delete';
  channel: string;
  /** Who said it (for a deletion: who had said the deleted message). */
  user: string;
  /** The text (an edit's new text; empty for a deletion). */
  text: string;
  /** The message's ts; for an edit or a deletion, the ts of the message changed. */
  ts: string;
  /** An edit's own ts (`edited.ts`, else the event's), which tells edits of one message apart. */
  revision?: string;
  /** A thread reply: the parent's ts. */
  thread_ts?: string;
  /** Files said with the message: read through Slack's file API when the gateway takes the item (files-in.ts). */
  files?: SlackFile[];
}

/** Who the relay is in Slack (auth.test, and the app of the envelopes), to recognise its own posts. */
export interface SlackSelf {
  userId?: string;
  botId?: string;
}

/** The fields of a message (an event, or the `message` / `previous_message` of a change) the relay reads. */
interface SlackMessage {
  type?: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  bot_profile?: unknown;
  app_id?: string;
  text?: string;
  ts?: string;
  thread_ts?: string;
  edited?: { user?: string; ts?: string };
  files?: SlackFile[];
}

interface MessageEvent extends SlackMessage {
  hidden?: boolean;
  channel?: string;
  /** message_changed: the message as it is now, and as it was. */
  message?: SlackMessage;
  previous_message?: SlackMessage;
  /** message_deleted: the ts of the message deleted. */
  deleted_ts?: string;
}

interface EventCallback {
  type?: string;
  event_id?: string;
  api_app_id?: string;
  event?: MessageEvent;
}

/** Message subtypes that are new messages; other subtypes (joins, topics, bots, ...) are not relayed. */
export const NEW_MESSAGE_SUBTYPES = new Set<string | undefined>([undefined, 'me_message', 'thread_broadcast', 'file_share']);

export type Admission = { item: InboundItem; keys: string[] } | { ignored: string };

/**
 * Decides, without any I/O, whether an envelope carries something to relay: an `events_api` envelope
 * with a `message` event in a channel that may be mapped, by a person (no bot_id, not the relay's own
 * user or app), that is a new message, an edit (`message_changed` whose text changed) or a deletion
 * (`message_deleted`). `keys` (event id; channel+ts, with the edit's revision or `~delete`) are what
 * duplicates share.
 */
export function admit(envelope: Pick<Envelope, 'type' | 'body'>, self: SlackSelf, channels: ChannelMap): Admission {
  if (envelope.type !== 'events_api') return { ignored: `envelope ${envelope.type}` };
  const body = (envelope.body ?? {}) as EventCallback;
  const event = body.event;
  if (!event || event.type !== 'message') return { ignored: `event ${event?.type ?? 'missing'}` };
  const taken = event.subtype === 'message_changed' ? changed(event) : event.subtype === 'message_deleted' ? deleted(event) : posted(event);
  if ('ignored' in taken) return taken;
  const { item, by } = taken;
  if (by.bot_id || by.bot_profile) return { ignored: by.bot_id !== undefined && by.bot_id === self.botId ? 'own post' : 'a bot' };
  if (!by.user) return { ignored: 'no user' };
  if (by.user === self.userId || (by.app_id !== undefined && by.app_id === body.api_app_id)) return { ignored: 'own post' };
  if (!event.channel || !item.ts) return { ignored: 'no channel or ts' };
  if (!channels.mightMap(event.channel)) return { ignored: 'channel not mapped' };
  item.channel = event.channel;
  item.user = by.user;
  const keys = [`m:${event.channel}:${item.ts}${item.kind === 'edit' ? `~edit~${item.revision}` : item.kind === 'delete' ? '~delete' : ''}`];
  if (body.event_id) keys.push(`e:${body.event_id}`);
  return { item, keys };
}

/** What an event says, and the message whose author it is by (checked for bots and the relay itself). */
type Taken = { item: InboundItem; by: SlackMessage } | { ignored: string };

function posted(event: MessageEvent): Taken {
  if (!NEW_MESSAGE_SUBTYPES.has(event.subtype) || event.hidden) return { ignored: `subtype ${event.subtype ?? 'hidden'}` };
  const item: InboundItem = { kind: event.subtype === 'me_message' ? 'action' : 'message', channel: '', user: '', text: event.text ?? '', ts: event.ts ?? '' };
  if (event.thread_ts && event.thread_ts !== event.ts) item.thread_ts = event.thread_ts;
  if (event.files?.length) item.files = event.files.map(keptFile);
  return { item, by: event };
}

/**
 * An edit: `message` is the message now. Slack also sends message_changed when nothing was said anew
 * (a link preview attached, a thread reply counted under its parent): those keep the text and are not edits.
 */
function changed(event: MessageEvent): Taken {
  const now = event.message;
  if (!now?.ts) return { ignored: 'subtype message_changed without a message' };
  if (now.subtype !== undefined && !NEW_MESSAGE_SUBTYPES.has(now.subtype)) return { ignored: `a change of a ${now.subtype}` };
  if (event.previous_message && (now.text ?? '') === (event.previous_message.text ?? '')) return { ignored: 'message_changed without a new text' };
  const revision = now.edited?.ts ?? event.ts ?? now.ts;
  return { item: { kind: 'edit', channel: '', user: '', text: now.text ?? '', ts: now.ts, revision }, by: now };
}

/** A deletion: who had said the message is in `previous_message` (none: not relayed). */
function deleted(event: MessageEvent): Taken {
  const before = event.previous_message;
  if (!event.deleted_ts) return { ignored: 'subtype message_deleted without deleted_ts' };
  if (!before) return { ignored: 'subtype message_deleted without previous_message' };
  return { item: { kind: 'delete', channel: '', user: '', text: '', ts: event.deleted_ts }, by: before };
}
