import type { ChatMessage, OwnPost, PluginContext } from '../../src/index.js';

/**
 * Who said a line the bot relayed from another side of a gateway (IRC, Slack, another chat): the chat
 * message is the bot's, so the jsonl entry names the speaker beside it, whether the line came round the
 * chain or was read back from the chat's history (the origin is in the gateways' message map).
 */
export interface RelayedFrom {
  platform: string;
  id: string;
  name: string;
  gateway: string;
}

/** A chat message as the logger keeps it: the jsonl entry adds `relayed_from` for a relayed line. */
export type LoggedMessage = ChatMessage & { relayed_from?: RelayedFrom };

/** The chain's message, with `relayed_from` when the bot relayed it (a copy: the chain's message is shared). */
export function loggedMessage(ctx: PluginContext): LoggedMessage {
  return withOrigin(ctx.message, ctx.own);
}

/** A message with `relayed_from` when `own` says the bot relayed it (a copy; the message itself is shared). */
export function withOrigin(message: ChatMessage, own: OwnPost | undefined): LoggedMessage {
  const relayed = own?.relayed;
  if (!relayed) return message;
  const { platform, id, name } = relayed.speaker;
  return { ...message, relayed_from: { platform, id, name, gateway: relayed.gateway } };
}
