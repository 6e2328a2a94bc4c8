import type { Group, Subscription } from './model.js';

/** The permission flags of spec 2.4 in their current form (the older-form flags are not produced). */
export const PERM_FLAGS = [
  'archives_visible', 'members_visible', 'chat_visible', 'calendar_visible', 'files_visible', 'database_visible',
  'photos_visible', 'wiki_visible', 'member_directory_visible', 'hashtags_visible', 'guidelines_visible',
  'subgroups_visible', 'open_donations_visible', 'polls_visible',
  'manage_subgroups', 'delete_group', 'download_archives', 'download_entire_group', 'download_members',
  'view_activity', 'create_hashtags', 'manage_hashtags', 'manage_integrations', 'manage_group_settings',
  'make_moderator', 'manage_member_subscription_options', 'manage_pending_members', 'remove_members',
  'ban_members', 'manage_group_billing', 'manage_group_payments', 'edit_archives', 'manage_pending_messages',
  'invite_members', 'can_post', 'can_vote', 'manage_polls', 'manage_photos', 'manage_members', 'manage_calendar',
  'manage_chats', 'view_member_directory', 'manage_files', 'manage_wiki', 'manage_subscription',
  'public_page', 'sub_page', 'mod_page',
] as const;

export type PermFlag = (typeof PERM_FLAGS)[number];
export type Perms = Record<PermFlag, boolean>;

/** The caller's standing in a group, derived from their subscription. */
export type Standing = 'owner' | 'moderator' | 'member' | 'banned' | 'none';

const OWNER_ONLY: PermFlag[] = ['delete_group', 'manage_group_billing', 'manage_group_payments', 'make_moderator'];

const MODERATOR: PermFlag[] = [
  'manage_subgroups', 'download_entire_group', 'download_members', 'view_activity', 'create_hashtags',
  'manage_hashtags', 'manage_integrations', 'manage_group_settings', 'manage_member_subscription_options',
  'manage_pending_members', 'remove_members', 'ban_members', 'edit_archives', 'manage_pending_messages',
  'invite_members', 'manage_polls', 'manage_photos', 'manage_members', 'manage_calendar', 'manage_chats',
  'manage_files', 'manage_wiki', 'mod_page',
];

const MEMBER_VISIBLE: PermFlag[] = [
  'calendar_visible', 'files_visible', 'database_visible', 'photos_visible', 'wiki_visible', 'hashtags_visible',
  'guidelines_visible', 'subgroups_visible', 'open_donations_visible', 'polls_visible', 'can_vote',
  'member_directory_visible', 'view_member_directory', 'manage_subscription', 'sub_page',
];

export function standingOf(sub: Subscription | undefined): Standing {
  if (!sub || sub.removed !== undefined) return 'none';
  return sub.role;
}

/**
 * Whether the caller may know the group exists (docs/protocol.md "What an outsider can tell"): it holds a
 * live subscription to it (a banned member knows the group it is banned from), or the group's archives
 * are public. Anything in a group the caller may not see answers exactly as an unknown id does.
 */
export function seesGroup(group: Group, sub: Subscription | undefined): boolean {
  return standingOf(sub) !== 'none' || group.settings.privacy === 'group_privacy_none';
}

/**
 * Our decision (docs/protocol.md, "Permissions"): the flags follow from the standing and the group's
 * settings; a subscription's `grants` add flags on top for anyone not banned.
 */
export function computePerms(group: Group, sub: Subscription | undefined): Perms {
  const standing = standingOf(sub);
  const perms = Object.fromEntries(PERM_FLAGS.map((flag) => [flag, false])) as Perms;
  const s = group.settings;
  const isMod = standing === 'owner' || standing === 'moderator';
  const isMember = isMod || standing === 'member';

  perms.public_page = true;
  perms.archives_visible = s.privacy === 'group_privacy_none' ? standing !== 'banned' : isMember;
  perms.members_visible =
    s.membersVisible === 'group_view_members_anyone' ? standing !== 'banned'
    : s.membersVisible === 'group_view_members_subscribers' ? isMember
    : isMod;

  if (isMember) for (const flag of MEMBER_VISIBLE) perms[flag] = true;
  if (isMod) for (const flag of MODERATOR) perms[flag] = true;
  if (standing === 'owner') for (const flag of OWNER_ONLY) perms[flag] = true;

  perms.chat_visible = s.chatAccess === 'group_access_members' ? isMember
    : s.chatAccess === 'group_access_limited' ? isMod
    : false;
  if (s.chatAccess === 'group_access_none') perms.manage_chats = false;

  perms.download_archives =
    s.allowDownloads === 'allow_downloads_by_members' ? isMember
    : s.allowDownloads === 'allow_downloads_by_moderators' ? isMod
    : false;

  perms.can_post = !s.locked && (s.announce ? isMod : isMember);
  perms.create_hashtags = isMod || (isMember && s.hashTagPermissions === 'hash_tag_create_anyone');

  if (isMember && sub) {
    for (const grant of sub.grants) {
      if ((PERM_FLAGS as readonly string[]).includes(grant)) perms[grant as PermFlag] = true;
    }
    // A grant of manage_chats implies seeing the chats it manages.
    if (perms.manage_chats && s.chatAccess !== 'group_access_none') perms.chat_visible = true;
  }
  return perms;
}
