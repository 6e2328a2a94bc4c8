import type { Chat, PluginContext } from '../../src/index.js';

/**
 * Who may use a rule. No `allow` at all: everyone. Otherwise anyone matching one of the entries:
 * a user id, an e-mail address, the chat's owner, the group's moderators (see `Moderators`).
 */
export interface AllowSpec {
  users?: readonly string[];
  emails?: readonly string[];
  chat_owner?: boolean;
  moderators?: boolean;
  everyone?: boolean;
}

/**
 * The group's moderators, as configured. The interface shows no one's standing but the caller's own
 * (perms and member_info are always the caller's, and there is no member list), so the responder
 * cannot ask the service who moderates a group; bots.yaml says it.
 */
export interface Moderators {
  users: readonly string[];
  emails: readonly string[];
}

/** How long a chat's owner is remembered. */
const OWNER_TTL_MS = 60_000;

export class AccessControl {
  private readonly owners = new Map<string, { owner: string | undefined; at: number }>();

  constructor(private readonly moderators: Moderators) {}

  /** Whether the sender of ctx's message may use a rule with this `allow`. */
  async allows(allow: AllowSpec | undefined, ctx: PluginContext): Promise<boolean> {
    if (!allow || allow.everyone) return true;
    const { user_id: userId, email } = ctx.message;
    if (allow.users?.includes(userId)) return true;
    if (email && allow.emails?.some((entry) => sameEmail(entry, email))) return true;
    if (allow.moderators && this.isModerator(userId, email)) return true;
    if (allow.chat_owner && (await this.chatOwner(ctx)) === userId) return true;
    return false;
  }

  isModerator(userId: string, email: string): boolean {
    return this.moderators.users.includes(userId) || (email !== '' && this.moderators.emails.some((entry) => sameEmail(entry, email)));
  }

  /** Who may use it, in words: "the chat's owner and the group's moderators". */
  describe(allow: AllowSpec | undefined): string {
    if (!allow || allow.everyone) return 'everyone';
    const who: string[] = [];
    if (allow.chat_owner) who.push('the chat\'s owner');
    if (allow.moderators) who.push('the group\'s moderators');
    if ((allow.users?.length ?? 0) + (allow.emails?.length ?? 0) > 0) who.push('a few named people');
    if (who.length === 0) return 'nobody';
    return who.length === 1 ? who[0]! : `${who.slice(0, -1).join(', ')} and ${who.at(-1)}`;
  }

  /** The chat's owner (`chat.user_id` from getchats), remembered for a minute. */
  async chatOwner(ctx: PluginContext): Promise<string | undefined> {
    const cached = this.owners.get(ctx.chat.id);
    if (cached && Date.now() - cached.at < OWNER_TTL_MS) return cached.owner;
    const chat = await findChat(ctx, ctx.chat.id);
    this.owners.set(ctx.chat.id, { owner: chat?.user_id, at: Date.now() });
    return chat?.user_id;
  }

  /** Forgets what is remembered of a chat (after the bot changed it). */
  forget(chatId: string): void {
    this.owners.delete(chatId);
  }
}

function sameEmail(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

/** A chat of the message's group by id or subject, open or closed. */
export async function findChat(ctx: PluginContext, idOrSubject: string): Promise<Chat | undefined> {
  for (const showClosed of [false, true]) {
    const pages = ctx.client.paginate<Chat>('getchats', { group_id: ctx.chat.groupId, show_closed: showClosed, limit: 100 });
    let bySubject: Chat | undefined;
    for await (const chat of pages) {
      if (chat.id === idOrSubject) return chat;
      if (chat.subject === idOrSubject) bySubject ??= chat;
    }
    if (bySubject) return bySubject;
  }
  return undefined;
}
