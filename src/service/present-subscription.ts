import { isoTime } from './clock.js';
import { wireId } from './ids.js';
import type { Group, Subscription } from './model.js';
import { UNSET_TIME } from './present-group.js';
import type { Store } from './store.js';

/** What turns a subscription into a member_info (spec 2.5): its group and the member's perms there. */
export interface MemberInfoOf {
  group: Group;
  perms: Record<string, unknown>;
}

/**
 * The subscription object of spec 2.5 (every field of its table); with `memberInfo`, the member_info
 * that `sub_data` holds: the same fields and the member_info additions.
 */
export function presentSubscription(store: Store, sub: Subscription, memberInfo?: MemberInfoOf): Record<string, unknown> {
  const user = store.users.get(sub.userId);
  const view: Record<string, unknown> = {
    object: memberInfo ? 'member_info' : 'subscription',
    id: wireId(sub.id),
    user_id: wireId(sub.userId),
    group_id: wireId(sub.groupId),
    created: isoTime(sub.created),
    updated: isoTime(sub.updated),
    status: sub.role === 'banned' ? 'sub_status_banned' : 'sub_status_normal',
    post_status: 'sub_poststatus_normal',
    email_delivery: 'email_delivery_single',
    message_selection: 'message_selection_all',
    auto_follow_replies: false,
    max_attachment_size: 'max_attachment_size_large',
    approved_posts: sub.approvedPosts,
    mod_status: modStatus(sub.role),
    pending_msg_notify: 'sub_notify_email',
    pending_sub_notify: 'sub_notify_email',
    sub_notify: 'sub_notify_email',
    storage_notify: 'sub_notify_email',
    sub_group_notify: 'sub_notify_email',
    message_report_notify: 'sub_notify_email',
    mod_permissions: sub.role === 'moderator' ? 'sub_perm_banmembers' : '',
    owner_msg_notify: 'sub_ownermsg_notify_subs',
    email: user?.email ?? '',
    user_status: 'user_status_confirmed',
    user_name: user?.userName ?? '',
    timezone: user?.timezone ?? 'UTC',
    full_name: user?.fullName ?? '',
    about_me: user?.aboutMe ?? '',
    location: user?.location ?? '',
    website: user?.website ?? '',
    about_format: 'about_html',
    profile_photo_id: '',
    profile_privacy: user?.profilePrivacy ?? 'profile_members',
    dont_munge_message_id: false,
    moderator_notes: sub.moderatorNotes,
    moderator_notes_updated: UNSET_TIME,
    use_signature: sub.signature !== '',
    use_signature_email: sub.signature !== '',
  };
  if (!memberInfo) return view;
  const { group, perms } = memberInfo;
  const lastPost = (store.messagesByGroup.get(group.id) ?? []).findLast((m) => m.userId === sub.userId);
  return {
    ...view,
    group_name: group.name,
    profile_photo_url: '',
    signature: sub.signature,
    num_drafts: [...store.drafts.values()].filter((d) => d.userId === sub.userId && d.groupId === group.id).length,
    pending_subs: 0,
    pending_msgs: 0,
    subs_count: [...store.subscriptions.values()].filter((s) => s.groupId === group.id && !s.removed).length,
    cover_photo_url: '',
    icon_url: '',
    nice_group_name: group.title,
    most_recent_message: lastPost ? isoTime(lastPost.created) : UNSET_TIME,
    perms,
  };
}

/**
 * A member's standing as the real service reports it (docs/protocol.md "Subscriptions"): an owner is
 * `sub_modstatus_owner`, not a moderator (public clients tell owners by it), a moderator
 * `sub_modstatus_moderator`, anyone else `sub_modstatus_none`.
 */
export function modStatus(role: Subscription['role']): string {
  switch (role) {
    case 'owner': return 'sub_modstatus_owner';
    case 'moderator': return 'sub_modstatus_moderator';
    default: return 'sub_modstatus_none';
  }
}
