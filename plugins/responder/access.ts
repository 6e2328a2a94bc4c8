import type { Chat, PluginContext, Speaker } from '../../src/index.js';
import { identityProblem, IdentityList } from './identity.js';

/**
 * Who may use a rule. No `allow` at all: everyone. Otherwise anyone matching one of the entries:
 * a person (`users:`, see identity.ts: a chat user id, `irc:nick!user@host`, `slack:U…`, ...), an
 * e-mail address, the chat's owner, the group's moderators (see `Moderators`).
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
 * cannot ask the service who moderates a group; bots.yaml says it. `users` takes the same entries as
 * a rule's `users:` (so a moderator on IRC is named by a mask with a host).
 */
export interface Moderators {
  users: readonly string[];
  emails: readonly string[];
}

/** How long a chat's owner is remembered. */
const OWNER_TTL_MS = 60_000;

/** Who may use a rule (its `allow`): listed identities, the configured moderators, the chat's owner. */
export class AccessControl {
  private readonly owners = new Map<string, { owner: string | undefined; at: number }>();
  private readonly moderators: IdentityList;
  /** Each rule's `allow` read once (its users and e-mails as identities). */
  private readonly lists = new WeakMap<AllowSpec, IdentityList>();

  constructor(moderators: Moderators) {
    this.moderators = new IdentityList(moderators.users, moderators.emails);
  }

  /**
   * Whether the sender of ctx's message may use a rule with this `allow`. Always ctx.sender: the chat
   * message of a line relayed from IRC or Slack is the bot's own, so its user_id and e-mail would
   * lend the bot's standing to whoever spoke on the other side.
   *
   * `chat_owner` is the owner of the chat the rule acts on: `targetOwner` gives it for a command that
   * names its chat (target.ts), asked only when nothing else allows the sender and the sender is a
   * chat member; without it, the chat where the message was said.
   */
  async allows(allow: AllowSpec | undefined, ctx: PluginContext, targetOwner?: () => Promise<string | undefined>): Promise<boolean> {
    if (!allow || allow.everyone) return true;
    const sender = ctx.sender;
    if (this.listOf(allow).includes(sender)) return true;
    if (allow.moderators && this.isModerator(sender)) return true;
    // The chat's owner is a chat member: nobody elsewhere is ever taken for them.
    if (allow.chat_owner && sender.platform === 'chat') {
      const owner = targetOwner ? await targetOwner() : await this.chatOwner(ctx);
      if (owner === sender.id) return true;
    }
    return false;
  }

  /** Whether the speaker is one of the configured moderators (only as named: an IRC nick is not a chat member). */
  isModerator(speaker: Speaker): boolean {
    return this.moderators.includes(speaker);
  }

  private listOf(allow: AllowSpec): IdentityList {
    let list = this.lists.get(allow);
    if (!list) {
      list = new IdentityList(allow.users ?? [], allow.emails ?? []);
      this.lists.set(allow, list);
    }
    return list;
  }

  /** Who may use it, in words: "the chat's owner and the group's moderators" ("the owner of standup" for a command's target). */
  describe(allow: AllowSpec | undefined, target?: string): string {
    if (!allow || allow.everyone) return 'everyone';
    const who: string[] = [];
    if (allow.chat_owner) who.push(target === undefined ? 'the chat\'s owner' : `the owner of ${target}`);
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

/** A rule whose `allow` names someone in a form that can never match is a mistake, said when it is added. */
export function checkAllow(rule: string, allow: AllowSpec | undefined): void {
  for (const entry of allow?.users ?? []) {
    const problem = identityProblem(entry);
    if (problem) throw new TypeError(`${rule}: allow.users ${JSON.stringify(entry)}: ${problem}`);
  }
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
