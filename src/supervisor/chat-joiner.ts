import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import { BadRequestError } from '../api/errors.js';
import type { Chat, Id } from '../api/types.js';
import type { ChatConfig } from '../config/bots-config.js';

/** A configured chat that cannot be used as configured (not there and not to be created, not allowed). */
export class ChatSetupError extends Error {
  override name = 'ChatSetupError';
}

type GroupParam = { group_name: string } | { group_id: Id };

/** The group a config names, by name or else by id (a name is tried first: names may look like numbers). */
async function groupParam(client: GroupsClient, group: string): Promise<GroupParam> {
  try {
    await client.getChats({ group_name: group, limit: 1 });
    return { group_name: group };
  } catch (error) {
    if (error instanceof BadRequestError && error.extra === 'invalid group_name') {
      await client.getChats({ group_id: group, limit: 1 }).catch((byId: unknown) => {
        throw byId instanceof BadRequestError ? new ChatSetupError(`no group named or numbered ${group}`) : byId;
      });
      return { group_id: group };
    }
    throw error;
  }
}

/** The group's chat whose id or subject is `chat`, open or closed (an id match wins). */
export async function findChat(client: GroupsClient, group: GroupParam, chat: string): Promise<Chat | undefined> {
  const found: Chat[] = [];
  for (const showClosed of [false, true]) {
    for await (const candidate of client.paginate<Chat>('getchats', { ...group, show_closed: showClosed, limit: 100 })) {
      if (candidate.id === chat || candidate.subject === chat) found.push(candidate);
    }
  }
  return found.find((c) => c.id === chat) ?? found.find((c) => !c.is_closed) ?? found[0];
}

export interface JoinedChat {
  chat: Chat;
  group: GroupParam;
  /** The bot's chat_sub; undefined while the chat is closed (it cannot be joined then). */
  chatsubId: Id | undefined;
}

/**
 * Finds a configured chat, makes it when asked and allowed, and reuses the bot's chat_sub or joins.
 * A closed chat is returned without a chat_sub: the runner waits for it to reopen.
 */
export async function setUpChat(client: GroupsClient, entry: ChatConfig, log: Logger): Promise<JoinedChat> {
  const group = await groupParam(client, entry.group);
  let chat = await findChat(client, group, entry.chat);
  if (!chat) {
    if (!entry.create) throw new ChatSetupError(`group ${entry.group} has no chat ${entry.chat} (set create: true to make it)`);
    chat = await client.newChat({ ...group, subject: entry.chat, desc: entry.desc });
    log.info({ chatId: chat.id }, 'made the chat');
  }
  if (chat.chat_sub) return { chat, group, chatsubId: chat.chat_sub.id };
  if (chat.is_closed) return { chat, group, chatsubId: undefined };
  return { chat, group, chatsubId: await joinOrReuse(client, chat, group) };
}

/** joinchat, treating `already subscribed` (a race with another process) as success. */
export async function joinOrReuse(client: GroupsClient, chat: Chat, group: GroupParam): Promise<Id> {
  try {
    return (await client.joinChat({ chat_id: chat.id })).id;
  } catch (error) {
    if (!(error instanceof BadRequestError && error.extra === 'already subscribed')) throw error;
    const again = await findChat(client, group, chat.id);
    if (!again?.chat_sub) throw new ChatSetupError(`chat ${chat.subject} says already subscribed but shows no chat_sub`);
    return again.chat_sub.id;
  }
}
