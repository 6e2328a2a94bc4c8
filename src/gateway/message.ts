import type { ChatMessage } from '../api/types.js';
import type { ChatInfo } from '../chat/chat-info.js';
import type { Attachment, IncomingFile, RefusedFile } from '../media/attachment.js';

/**
 * The one shape of what travels through a gateway (docs/gateways.md). Each platform turns its own
 * events into an IncomingMessage and renders an OutgoingMessage as well as it can; its doc says what
 * it drops.
 */

/** Which way an endpoint takes part: `in` (what is said there goes out), `out` (lines are sent to it), or both. */
export type Direction = 'in' | 'out' | 'inout';

/** What happened: a message, an action (`/me`), an edit or deletion of an earlier message, a join, leave or topic. */
export type EventKind = 'message' | 'action' | 'edit' | 'delete' | 'join' | 'leave' | 'topic';

/**
 * Who said it, in the platform's own terms. `id` is what access rules name (after `<platform>:`):
 * a chat user's id, an IRC `nick!user@host`, a Slack user id (`U…`).
 */
export interface Speaker {
  /** `chat` for the service's chats, else the relay's platform (`irc`, `slack`, ...). */
  platform: string;
  id: string;
  /** The name to show. */
  name: string;
  /** A chat member's e-mail address, when the service shows it. */
  email?: string;
}

/** Something said on a relay's platform, handed to the gateways of its channel (`env.gateway.receive`). */
export interface IncomingMessage {
  kind: EventKind;
  /** Plain text, as the speaker wrote it (the relay turned its markup into plain text). */
  text: string;
  speaker: Speaker;
  /**
   * The platform's id of this message in its channel (IRC has none: the relay makes one). For `edit`
   * and `delete`: the id of the message that was changed.
   */
  nativeId: string;
  /** For `edit`: what makes this edit differ from other edits of the same message (Slack's edit `ts`). */
  revision?: string;
  /** ISO 8601; now when not given. */
  time?: string;
  /** The native id (in the same channel) of the message this answers or threads under. */
  replyTo?: string;
  /**
   * The text already says what it answers (group-mail's `re: <subject> — …`): where there are no threads
   * (a chat, IRC, XMPP, Discord webhooks) no quote of the parent is put before it. Threads and platform
   * replies are kept.
   */
  namesParent?: boolean;
  /**
   * Files said with the line: the gateway reads each once into the media store (in order with the
   * channel's other lines) before handing the line on; a refused one becomes a RefusedFile.
   */
  files?: IncomingFile[];
  /**
   * How the line shows in a chat, rendered by the relay's own template; the default is `<name> text`
   * (`* name text` for an action). Every line of it must carry the speaker, so a line of the text cannot
   * pass for someone else's: render it with `attributedLines(text, (line) => ...)` (docs/gateways.md).
   */
  chatText?: string;
}

/** Where a relayed line came from: the gateway it travels in, its origin endpoint and native id. */
export interface GatewayOrigin {
  gateway: string;
  /** The origin endpoint's id (`irc:#general@bot/relay-irc`, `chat:<chat id>@bot`; see endpointId). */
  endpoint: string;
  platform: string;
  nativeId: string;
  kind: EventKind;
}

/** What a gateway hands a relay to send into one of its channels (`PluginInstance.endpoint.send`). */
export interface OutgoingMessage {
  /** Stable across restarts, unique per line and channel: the same key sent twice must go out once. */
  key: string;
  gateway: string;
  kind: EventKind;
  /** The text as its speaker said it (no `<name>` prefix). */
  text: string;
  speaker: Speaker;
  /** Where it was first said: a chat (the chat's message id) or another relay's channel. */
  origin: Omit<GatewayOrigin, 'gateway' | 'kind'>;
  time: string;
  /** The native id in THIS channel of the message this answers or threads under, when the map knows it. */
  replyTo?: string;
  /**
   * When the map does not know that id yet (the parent was queued for this channel but not posted when
   * this line was handed on: a topic and its replies read together): the parent's key here, for
   * `gateway.nativeOf(replyToKey, channel)` right before sending. Relays that do not ask show the quote.
   */
  replyToKey?: string;
  /** The start of the message this answers (who said it and a snippet), for platforms that cannot thread. */
  quote?: { name: string; text: string };
  /** For `edit` and `delete`: the native id in THIS channel of the changed message, when this relay posted it. */
  target?: string;
  /** Files said with the line, in the media store: upload natively (`env.media.open`), else show their links (fileLines). */
  files?: Attachment[];
  /** Files said with the line that were not relayed, and why: say so on this side (fileLines). */
  refusedFiles?: RefusedFile[];
  /**
   * Where the line was handed on from. A line said in a chat, or relayed from another bot's relay
   * through this bot's bus chat: that chat and message (relays keep per-msg_num marks with it). A line
   * from another relay of the same bot is handed on at the gateway's intake, before any chat has it
   * (docs/gateways.md): `message` is absent, and `chat` is the bot's bus chat of the gateway (whose
   * per-chat settings, such as relay-irc's prefix, apply), absent only while the bot has not joined it
   * yet. Such a line is told apart from others by its `key` alone.
   */
  source: { chat?: ChatInfo; message?: ChatMessage };
}

/** The bot's own post, as the chain sees it (`ctx.own`). */
export interface OwnPost {
  /** Set when the post relays a line from another endpoint of a gateway; absent for the bot's own voice (a plugin's reply or send). */
  relayed?: RelayedLine;
}

export interface RelayedLine extends GatewayOrigin {
  /** The speaker on the origin side. */
  speaker: Speaker;
  /** The line as said (without the `<name>` prefix the chat shows). */
  text: string;
  /** The native id on the origin side of what it answers, if anything. */
  replyTo?: string;
  /** Files said with the line (in the media store), and those refused: the logger records them. */
  files?: Attachment[];
  refusedFiles?: RefusedFile[];
  /** The chat is the gateway's bus for this bot: the line goes on from here to the bot's relays in `gateway`. */
  bus: boolean;
  /** The bot first hears the line here: its plugins answer it here and nowhere else. */
  first: boolean;
}

/** The id by which the message map and logs know an endpoint. */
export function chatEndpointId(bot: string, chatId: string): string {
  return `chat:${chatId}@${bot}`;
}

export function relayEndpointId(platform: string, channel: string, bot: string, instance: string): string {
  return `${platform}:${channel}@${bot}/${instance}`;
}
