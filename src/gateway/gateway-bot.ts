import type { Logger } from 'pino';
import type { ChatMessage } from '../api/types.js';
import { sleep } from '../chat/backoff.js';
import type { ChatInfo, PlatformEndpoint } from '../pipeline/plugin.js';
import type { MapRecord } from '../store/message-map.js';
import { PostFailedError } from '../supervisor/chat-outbox.js';
import { chatEndpointId, type Speaker } from './message.js';
import { continuationOf, splitForChat } from './render.js';

/** What the bot's outbox keeps with a relayed post, to tell the map once the service stored it. */
export interface RelayTag {
  /** The line's record key in the message map. */
  key: string;
  /**
   * The chat is the line's bus for this bot: when the post comes back through the chain, the bot sends
   * it on to its relays. False when they had it already (at the gateway's intake, docs/gateways.md).
   */
  bus: boolean;
  first: boolean;
  /** For a line too long for one post: which part this is (1, 2, ...; the first part has none). */
  part?: number;
}

/** One bot, as the gateways reach it. */
export interface GatewayBot {
  name: string;
  speaker(): Speaker;
  /** The bot's chat that a bots.yaml entry names (subject or id), once joined. */
  chat(key: string): ChatInfo | undefined;
  /** Whether the bot is still logging in and joining its chats (a line for a chat not joined yet waits). */
  starting(): boolean;
  /** Queues a relayed post (written to the outbox before it returns); throws PostFailedError when the chat refuses it now. */
  postRelayed(chat: ChatInfo, text: string, tag: RelayTag): Promise<ChatMessage>;
  endpoint(instance: string): PlatformEndpoint | undefined;
  /** Resolves once the bot's plugins have all started (its relays' endpoints exist from then on). */
  pluginsStarted(): Promise<void>;
  log: Logger;
}

/** What posting into chats counts (the gateway step's stats). */
export interface PostCounters {
  posted_to_chats: number;
  send_failed: number;
  already_taken: number;
}

/** How long a line from a relay waits for its chat to be joined while the bot starts. */
const JOIN_WAIT_MS = 60_000;

/** Posts a line into a chat once: parts the map or the outbox already has are not posted again. */
export function postCopy(bot: GatewayBot, chat: ChatInfo, record: MapRecord, line: string, tag: RelayTag, counters: PostCounters): void {
  const endpoint = chatEndpointId(bot.name, chat.id);
  splitForChat(line, continuationOf(record)).forEach((part, index) => {
    const where = index === 0 ? endpoint : `${endpoint}#${index}`;
    if (record.copies[where]) {
      counters.already_taken += 1;
      return;
    }
    const partTag = index === 0 ? tag : { key: tag.key, bus: false, first: false, part: index };
    bot.postRelayed(chat, part, partTag).then(() => {
      counters.posted_to_chats += 1;
    }, (error: unknown) => {
      counters.send_failed += 1;
      bot.log.error({ err: error, chat: chat.subject, line: record.key }, 'a relayed line was taken but could not be posted into the chat');
    });
  });
}

/** The bot's chat for a bots.yaml entry; while the bot starts, waits for it to be joined. */
export async function joined(bot: GatewayBot, key: string): Promise<ChatInfo> {
  const until = Date.now() + JOIN_WAIT_MS;
  for (;;) {
    const chat = bot.chat(key);
    if (chat) return chat;
    if (!bot.starting() || Date.now() > until) throw new PostFailedError(`bot ${bot.name} is not in a chat ${key}`);
    await sleep(250);
  }
}
