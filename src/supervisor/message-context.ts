import type { GroupsClient } from '../api/client.js';
import type { ChatMessage } from '../api/types.js';
import type { Delivery } from '../chat/sequencer.js';
import type { GatewayRouter } from '../gateway/gateway-router.js';
import type { Speaker } from '../gateway/message.js';
import type { BaseContext } from '../pipeline/chain.js';
import type { BotInfo, ChatInfo, ChatTarget, ReplyOptions } from '../pipeline/plugin.js';
import { PostFailedError } from './chat-outbox.js';

/** What a message's context needs of its bot (one object per bot, read at each message: a reload may change the gateways). */
export interface ContextSource {
  readonly bot: BotInfo;
  readonly client: GroupsClient;
  readonly gateways: GatewayRouter | undefined;
  /** The bot as a speaker: its voice in the gateways. */
  speaker(): Speaker;
  send(target: ChatTarget, text: string, origin: { chatId: string; msgNum: number }): Promise<ChatMessage>;
}

const SELF_ANSWER = 'not answering the bot\'s own post (a bot must not answer itself)';

/**
 * What the plugin chain gets with one message: who said it (a member, a person on another side of a
 * gateway, or the bot), whether it may be answered, and reply/send bound to its origin.
 */
export function messageContext(source: ContextSource, message: ChatMessage, delivery: Delivery, chat: ChatInfo): BaseContext {
  const { bot, gateways } = source;
  const origin = { chatId: chat.id, msgNum: message.msg_num };
  const isOwn = message.user_id === bot.userId;
  const own = isOwn ? (gateways?.ownPost(bot.name, chat, message) ?? {}) : undefined;
  const relayed = own?.relayed;
  // The bot's own voice is never answered (a plugin answering it would answer itself, for ever).
  const voice = isOwn && !relayed;
  const base: BaseContext = {
    message, chat, bot, client: source.client, backfilled: delivery.backfilled, ageMs: delivery.ageMs, wire: delivery.wire,
    text: relayed ? relayed.text : message.message,
    sender: relayed ? relayed.speaker : isOwn ? source.speaker() : memberOf(message),
    own,
    answerable: !isOwn || relayed?.first === true,
    reply: ((text: string, options?: ReplyOptions) => {
      if (voice) return Promise.reject(new PostFailedError(SELF_ANSWER));
      if (options?.only === 'origin' && relayed && gateways) {
        return gateways.answerAtOrigin(bot.name, base, text).then((sent) => (sent ? undefined : source.send(chat, text, origin)));
      }
      return source.send(chat, text, origin);
    }) as BaseContext['reply'],
    send: (target, text) => (voice ? Promise.reject(new PostFailedError(SELF_ANSWER)) : source.send(target, text, origin)),
  };
  return base;
}

/** A chat member as a speaker (`ctx.sender`). */
function memberOf(message: ChatMessage): Speaker {
  const speaker: Speaker = { platform: 'chat', id: message.user_id, name: message.display_name || message.user_name || message.user_id };
  if (message.email) speaker.email = message.email;
  return speaker;
}
