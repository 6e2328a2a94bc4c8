import type { ChatMessage, OwnPost, PluginContext } from '../../src/index.js';
import type { LoggedFile, LoggedRefusal } from './file-entries.js';

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

/**
 * A chat message as the logger keeps it: the jsonl entry adds `relayed_from` for a relayed line, and
 * the files said with it (`files`, `refused_files`; file-entries.ts) when there were any.
 */
export type LoggedMessage = ChatMessage & { relayed_from?: RelayedFrom; files?: LoggedFile[]; refused_files?: LoggedRefusal[] };

/** The chain's message, with `relayed_from` when the bot relayed it (a copy: the chain's message is shared). */
export function loggedMessage(ctx: PluginContext): LoggedMessage {
  return withOrigin(ctx.message, ctx.own);
}

/** A message with `relayed_from` when `own` says the bot relayed it (a copy; the message itself is shared). */
export function withOrigin(message: ChatMessage, own: OwnPost | undefined): LoggedMessage {
  const relayed = own?.relayed;
  if (!relayed) return message;
  const { platform, id, name } = relayed.speaker;
  const files = (relayed.files ?? []).map((file): LoggedFile => ({
    name: file.name, content_type: file.contentType, size: file.size, image: file.image, ...(file.url !== undefined ? { url: file.url } : {}),
  }));
  const refused = (relayed.refusedFiles ?? []).map((file): LoggedRefusal => ({ name: file.name, reason: file.reason }));
  return {
    ...message, relayed_from: { platform, id, name, gateway: relayed.gateway },
    ...(files.length > 0 ? { files } : {}), ...(refused.length > 0 ? { refused_files: refused } : {}),
  };
}
