import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import { BadRequestError } from '../api/errors.js';
import type { Id } from '../api/types.js';
import type { ChatConfig } from '../config/bots-config.js';
import { nearestName } from '../config/nearest-name.js';
import { ChatSetupError, type ChatDirectory, type ChatEntry } from './chat-directory.js';

export { ChatSetupError };

export interface JoinedChat {
  chat: ChatEntry;
  /** The chat's group, listed: rejoins and reopening checks look the chat up there. */
  directory: ChatDirectory;
  /** The bot's chat_sub; undefined while the chat is closed (it cannot be joined then). */
  chatsubId: Id | undefined;
}

/**
 * Finds a configured chat in its group's directory (listed once for all of the bot's chats there),
 * makes it when asked and allowed, and reuses the bot's chat_sub or joins. Only chats without a
 * chat_sub cost a call. A closed chat is returned without a chat_sub: the runner waits for it to reopen.
 */
export async function setUpChat(client: GroupsClient, directory: ChatDirectory, entry: ChatConfig, log: Logger, remembered?: Id): Promise<JoinedChat> {
  let chat = directory.lookup(entry.chat) ?? renamed(directory, remembered, log);
  if (!chat) {
    if (!entry.create) throw new ChatSetupError(noSuchChat(entry, directory));
    chat = directory.note(await client.newChat({ ...directory.group, subject: entry.chat, desc: entry.desc }));
    log.info({ chatId: chat.id }, 'made the chat');
  }
  if (chat.chatsubId !== undefined) return { chat, directory, chatsubId: chat.chatsubId };
  if (chat.isClosed) return { chat, directory, chatsubId: undefined };
  return { chat, directory, chatsubId: await joinOrReuse(client, chat, directory) };
}

/** How many of the group's chats "no such chat" lists when none is near the name. */
const LISTED_CHATS = 10;

/** "group demo has no chat genral: did you mean general?", else the group's chats (the first ten). */
function noSuchChat(entry: ChatConfig, directory: ChatDirectory): string {
  const { open, closed } = directory.subjects();
  const nearest = nearestName(entry.chat, [...open, ...closed]);
  const subjects = [...open, ...closed.map((subject) => `${subject} (closed)`)];
  if (nearest) return `group ${entry.group} has no chat ${entry.chat}: did you mean ${nearest}? (or set create: true to make it)`;
  const listed = subjects.length > LISTED_CHATS ? `${subjects.slice(0, LISTED_CHATS).join(', ')}, ...` : subjects.join(', ');
  return `group ${entry.group} has no chat ${entry.chat} (${subjects.length ? `its chats: ${listed}; ` : 'it has no chats; '}set create: true to make it)`;
}

/**
 * The chat this entry named last time (its id, from the bot's state), under another subject now
 * (`!subject`, or renamed on the service): the entry follows it rather than making a new chat of the
 * old subject, which would leave the bot's conversation behind.
 */
function renamed(directory: ChatDirectory, remembered: Id | undefined, log: Logger): ChatEntry | undefined {
  if (remembered === undefined) return undefined;
  const chat = directory.lookup(remembered);
  if (chat?.id !== remembered) return undefined;
  log.info({ chatId: chat.id, subject: chat.subject }, 'the chat was renamed; following it by its id');
  return chat;
}

/** joinchat, treating `already subscribed` (a race with another process) as success. */
export async function joinOrReuse(client: GroupsClient, chat: { id: Id; subject: string }, directory: ChatDirectory): Promise<Id> {
  let id: Id;
  try {
    id = (await client.joinChat({ chat_id: chat.id })).id;
  } catch (error) {
    if (!(error instanceof BadRequestError && error.extra === 'already subscribed')) throw error;
    // The other join happened before ours was refused: a listing started now shows its chat_sub.
    const again = await directory.find(chat.id, 0);
    if (again?.chatsubId === undefined) throw new ChatSetupError(`chat ${chat.subject} says already subscribed but shows no chat_sub`);
    return again.chatsubId;
  }
  const known = directory.lookup(chat.id);
  if (known) known.chatsubId = id;
  return id;
}
