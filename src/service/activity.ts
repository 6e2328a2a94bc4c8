import type { Clock } from './clock.js';
import type { Group, Subscription, User } from './model.js';
import type { Store } from './store.js';

/**
 * The activity types the local service records (our decision: spec 4.1 names `action` without listing
 * its values). Each belongs to one `filter_by` family.
 */
export const ACTIONS = {
  member_joined: 'member',
  member_left: 'member',
  member_banned: 'member',
  moderator_added: 'mod',
  message_posted: 'message',
  topic_created: 'message',
  archive_downloaded: 'member',
  chat_created: 'mod',
  chat_updated: 'mod',
  chat_closed: 'mod',
  chat_reopened: 'mod',
  chat_deleted: 'mod',
  chat_joined: 'member',
  chat_left: 'member',
  payment_received: 'pay',
} as const;

export type Action = keyof typeof ACTIONS;
export const FILTER_FAMILIES = ['member', 'message', 'mod', 'pay'] as const;

export class ActivityRecorder {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** Records one entry; `entry` is HTML as in the real service (a link to the member, then the text). */
  record(group: Group, action: Action, actor: User | undefined, text: string, options: {
    sub?: Subscription;
    via?: string;
  } = {}): void {
    const who = actor
      ? `<a href="/g/${encodeURIComponent(group.name)}/member/${encodeURIComponent(actor.id)}">${escapeHtml(actor.fullName)}</a> `
      : '';
    this.store.addActivity({
      groupId: group.id,
      action,
      memberInfoId: options.sub?.id ?? (actor ? this.store.subscriptionOf(actor.id, group.id)?.id : undefined),
      entry: `${who}${escapeHtml(text)}`,
      via: options.via ?? 'via_api',
      created: this.clock.now(),
    });
  }
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
