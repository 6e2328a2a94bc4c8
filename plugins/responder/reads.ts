import type { PluginContext } from '../../src/index.js';
import { findChat, type AccessControl } from './access.js';
import type { CooldownSpec } from './cooldown.js';

/**
 * A side outside the group whose people may use the commands that read the group's content
 * (`!topics`, `!search`, `!activity`: a rule with `readsGroup`): bots.yaml's `reads_group`. A platform
 * (`irc`: every IRC side of the bot's gateways), or a gateway, all of its sides or those of one
 * platform (`{ gateway: lobby, platform: slack }`). `chat` is a line relayed from a chat of another
 * group (a chat of the group itself is its members').
 */
export type GroupReaderEntry = string | { gateway: string; platform?: string };

/** Whether the speaker of a message may see what the group shows its members, and if not, where they spoke. */
export type ReadVerdict = { allowed: true } | { allowed: false; side: string };

/**
 * Who may read the group's content through the bot. The bot reads with its own access, so an answer
 * must never show more than the asker could read at the service:
 *
 * - A member's message in the group's chat (or a line relayed from another chat of the same group):
 *   a member of the group, who sees its archive at the service (members hold `archives_visible`;
 *   the bot, a member too, reads the same topics and messages).
 * - Someone on IRC, Slack, Discord, Matrix, XMPP, the HTTP API, or in a chat of another group: the
 *   service would refuse them; answered only on a side the operator listed in `reads_group`, who
 *   thereby vouches that those who speak there may read the group — or when the speaker is one of
 *   the configured moderators (the operator named that identity).
 */
export class GroupReaders {
  constructor(private readonly entries: readonly GroupReaderEntry[], private readonly access: AccessControl) {}

  async verdict(ctx: PluginContext): Promise<ReadVerdict> {
    const relayed = ctx.own?.relayed;
    // Said in this chat, by a member of it (the bot's own voice is never answered at all).
    if (!relayed) return { allowed: true };
    if (relayed.platform === 'chat' && (await this.sameGroup(ctx, relayed.endpoint))) return { allowed: true };
    if (this.access.isModerator(ctx.sender)) return { allowed: true };
    const listed = this.entries.some((entry) => (typeof entry === 'string'
      ? entry === relayed.platform
      : entry.gateway === relayed.gateway && (entry.platform === undefined || entry.platform === relayed.platform)));
    return listed ? { allowed: true } : { allowed: false, side: relayed.platform === 'chat' ? 'a chat of another group' : relayed.platform };
  }

  /** Whether a chat endpoint (`chat:<id>@bot`) is a chat of the message's group. */
  private async sameGroup(ctx: PluginContext, endpoint: string): Promise<boolean> {
    const at = endpoint.lastIndexOf('@');
    const chatId = endpoint.slice('chat:'.length, at < 0 ? undefined : at);
    if (!endpoint.startsWith('chat:') || chatId === '') return false;
    // By id only: a subject of this group that matches another group's chat id is not it.
    const chat = await findChat(ctx, chatId);
    return chat?.id === chatId && chat.group_id === ctx.chat.groupId;
  }
}

/** The answer to a refused read: short, no content, and where it was asked from. */
export function readRefusal(label: string, group: string, side: string): string {
  return `Sorry, ${label} shows what only members of ${group} may read; it is not answered to ${side} here.`;
}

/** A speaker hears the refusal once per the rule's longest cooldown, else once a minute. */
export function refusalWindow(cooldown: CooldownSpec | undefined): number {
  const { rule = 0, user = 0, chat = 0 } = cooldown ?? {};
  return Math.max(rule, user, chat) || 60_000;
}
