import type { Logger } from 'pino';
import type { GroupsClient } from '../api/client.js';
import type { InadequatePermissionsError } from '../api/errors.js';
import type { Id } from '../api/types.js';
import type { BotConfig, ChatConfig } from '../config/bots-config.js';
import type { ChatInfo } from '../pipeline/plugin.js';
import type { CursorStore } from '../store/cursor-store.js';
import { ChatDirectory, ChatSetupError } from './chat-directory.js';
import { setUpChat } from './chat-joiner.js';
import { ChatRunner, type ChatRunnerOptions } from './chat-runner.js';
import { isGroupRefusal } from './login-wait.js';
import type { BotRunners } from './reload-runners.js';

const DEFAULT_RATE = { perSecond: 5, burst: 10 };

/** A chat skipped because its group refused the bot's account (banned, or not a member). */
export interface RefusedChat {
  group: string;
  log: Logger;
  error: InadequatePermissionsError;
}

/** What setting up a bot's chats uses of the bot (Bot.chatSetupSide). */
export interface ChatSetupSide {
  client: GroupsClient;
  log: Logger;
  /** bots.yaml's entry for the bot as it is now (a reload replaces it). */
  config: BotConfig;
  cursors: CursorStore;
  /** The bot's runners: each chat set up joins them. */
  chats: BotRunners;
  /** Set once the bot stops: no chat starts after it. */
  stopping(): boolean;
  /** What every runner of the bot takes alike: its stores, the upgrade gate, the hooks into its plugins and gateways. */
  shared: Pick<ChatRunnerOptions, 'outboxFile' | 'gate' | 'durable' | 'deliver' | 'relayed' | 'chatReset'>;
}

/** Sets up and starts the chats of these entries that do not run yet; answers those whose group refused the bot. */
export async function setUpChats(entries: ChatConfig[], bot: ChatSetupSide): Promise<RefusedChat[]> {
  const { log, config, client, cursors, chats } = bot;
  const user = client.session.user!;
  // Each group's chats are listed once for this pass; only chats without a chat_sub cost a call more.
  const directories = new Map<string, Promise<ChatDirectory>>();
  const refused: RefusedChat[] = [];
  for (const entry of entries) {
    if (bot.stopping()) return refused;
    // The chat this entry named last time (it may have been renamed since).
    const entryKey = `${entry.group}/${entry.chat}`;
    const before = cursors.chatOfEntry(entryKey);
    if (chats.find(entry.chat) || (before !== undefined && chats.byChatId(before))) continue;
    const chatLog = log.child({ chat: entry.chat, group: entry.group });
    try {
      let directory = directories.get(entry.group);
      if (!directory) directories.set(entry.group, (directory = ChatDirectory.open(client, entry.group)));
      const joined = await setUpChat(client, await directory, entry, chatLog, before);
      const info: ChatInfo = {
        id: joined.chat.id, subject: joined.chat.subject, groupId: joined.chat.groupId,
        groupName: groupNameOf(user, joined.chat.groupId) ?? entry.group, chatsubId: joined.chatsubId ?? '',
      };
      // An entry by subject that named another chat id last time: that chat was deleted and made again.
      const replaces = before !== undefined && before !== info.id && entry.chat !== info.id ? { entry: entryKey, chatId: before } : undefined;
      if (!replaces) cursors.noteEntry(entryKey, info.id);
      const runner = new ChatRunner({
        client, joined, info, botUserId: user.id, log: chatLog, cursors, replaces,
        ...bot.shared,
        rate: config.reply_rate ? { perSecond: config.reply_rate.per_second, burst: config.reply_rate.burst ?? 1 } : DEFAULT_RATE,
        historyOnFirstStart: config.history_on_first_start, closedCheckMs: config.closed_chat_check_seconds * 1000,
      });
      chats.add(runner, entryKey);
      runner.start();
    } catch (error) {
      // One chat that cannot be set up (or a group that is not there) does not keep the bot's other chats down.
      if (error instanceof ChatSetupError) chatLog.error({ reason: error.message }, 'chat skipped');
      else if (isGroupRefusal(error)) refused.push({ group: entry.group, log: chatLog, error });
      else throw error;
    }
  }
  return refused;
}

/** Says each chat skipped because its group refused the bot's account. */
export function sayRefusedChats(refused: RefusedChat[]): void {
  for (const { log, error } of refused) {
    log.error({ reason: error.message }, 'chat skipped: the bot\'s account may not use this group (banned, or not a member)');
  }
}

function groupNameOf(user: { subscriptions?: Array<{ group_id: Id; group_name: string }> }, groupId: Id): string | undefined {
  return user.subscriptions?.find((sub) => sub.group_id === groupId)?.group_name;
}
