import type { ChatMessage, PluginContext } from '../../src/index.js';

/**
 * Who said a line the bot relayed from another side of a gateway (IRC, Slack, another chat): the chat
 * message is the bot's, so the jsonl entry names the speaker beside it. Only for lines that came round
 * the chain; one read back from the chat's history (after a crash) carries no origin and has none.
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
  const relayed = ctx.own?.relayed;
  if (!relayed) return ctx.message;
  const { platform, id, name } = relayed.speaker;
  return { ...ctx.message, relayed_from: { platform, id, name, gateway: relayed.gateway } };
}
