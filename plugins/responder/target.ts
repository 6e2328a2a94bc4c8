import type { Chat, PluginContext } from '../../src/index.js';
import { findChat } from './access.js';
import type { ArgValues } from './args.js';
import { CommandError } from './errors.js';

/**
 * What a command acts on, declared with the command so that who may use it is decided on that, not
 * on where it is said: `allow: { chat_owner: true }` means the owner of the chat the command names.
 * `chatArg` names the argument that gives the chat (by subject or id, in the group of the chat where
 * the command is said); without one, or when it is left out, the target is the chat where it is said.
 * The group moderators are configured for is the message's group, and a target is always in it.
 */
export interface TargetSpec {
  chatArg?: string;
}

/** The chat a command acts on; a CommandError (answered to the caller) when the group has no such chat. */
export async function resolveTarget(ctx: PluginContext, spec: TargetSpec, args: ArgValues): Promise<Chat> {
  const named = spec.chatArg !== undefined ? args[spec.chatArg] : undefined;
  const wanted = typeof named === 'string' && named.trim() !== '' ? named.trim() : undefined;
  const chat = await findChat(ctx, wanted ?? ctx.chat.id);
  if (!chat) throw new CommandError(`there is no chat ${wanted ?? ctx.chat.subject} in ${ctx.chat.groupName}.`);
  return chat;
}
