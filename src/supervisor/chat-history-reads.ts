import type { GroupsClient } from '../api/client.js';
import type { Paginator } from '../api/paginate.js';
import type { ChatMessage, Id } from '../api/types.js';

/*
 * What a chat runner reads of its chat's history over REST (getchathistory): the messages from a msg_num
 * on (the sequencer's catch-up, the outbox's look-up of the bot's own posts), the newest few (a first
 * start's history), and the newest msg_num (the lag while the socket is down).
 */

/** The chat's messages from `start` on, oldest first, read a page of 100 at a time. */
export function historyFrom(client: GroupsClient, chatId: Id, start: number): Paginator<ChatMessage> {
  return client.paginate<ChatMessage>('getchathistory', { chat_id: chatId, start_msg_num: start, sort_dir: 'asc', limit: 100 });
}

/** The chat's newest `count` messages, oldest first. */
export async function latestMessages(client: GroupsClient, chatId: Id, count: number): Promise<ChatMessage[]> {
  const messages: ChatMessage[] = [];
  const pages = client.paginate<ChatMessage>('getchathistory', {
    chat_id: chatId, sort_dir: 'desc', limit: Math.min(100, count),
  }).pages();
  for await (const page of pages) {
    messages.push(...page.data);
    if (messages.length >= count) break;
  }
  return messages.slice(0, count).reverse();
}

/** The chat's newest msg_num, 0 when it has none (one getchathistory call). */
export async function newestMsgNum(client: GroupsClient, chatId: Id): Promise<number> {
  const page = await client.call<{ data?: ChatMessage[] }>('getchathistory', {
    chat_id: chatId, sort_dir: 'desc', limit: 1,
  });
  return page.data?.[0]?.msg_num ?? 0;
}
