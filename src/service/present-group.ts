import { isoTime } from './clock.js';
import { wireId } from './ids.js';
import type { Group } from './model.js';
import type { Store } from './store.js';
import { parentGroupOf } from './subgroups.js';
import { withoutTags } from '../api/html-text.js';

/** An unset time, as the real service writes it. */
export const UNSET_TIME = '0001-01-01T00:00:00Z';

/**
 * The group settings of spec 2.6 that the local service does not act on (it sends no mail, has no
 * wiki, calendar, photos, polls, reposts or billing). Each is answered with the value that
 * describes what the service actually does, so a client reading them is not misled: nothing is
 * moderated or closed after some days (0 = never), HTML is accepted, attachments are kept, replies go
 * to the group, every subscription is single-message delivery of all messages with large attachments.
 * Where spec 2.12 shows a value that fits, that value is used; `group_attachments_allowed` and
 * `group_reply_to_group` are ours (2.12 only shows their opposites). docs/protocol.md "Groups" lists them.
 */
const FIXED_SETTINGS = {
  unmoderate_users_after: 0,
  min_days_between_reposts: 0,
  max_number_of_reposts: 0,
  close_threads_after: 0,
  moderate_threads_after: 0,
  org_domain: '',
  allow_non_subs_to_post: false,
  force_html_emails: false,
  normalize_html_emails: false,
  remove_other_reply_options: false,
  seperate_footers: false, // spelled so in the spec
  plain_text_only: false,
  hash_tags_required: false,
  bounce_attachments: false,
  allow_photos_in_files: false,
  allow_reposts: false,
  auto_follow_replies_default: false,
  default_monday_start: false,
  disable_edits: false,
  disable_no_email: false,
  auto_close_threads: false,
  auto_moderate_threads: false,
  allow_parent_subs_to_post: false,
  send_event_summaries: false,
  send_invites_on_join: false,
  email_delivery_default: 'email_delivery_single',
  message_selection_default: 'message_selection_all',
  max_attachment_size_default: 'max_attachment_size_large',
  reply_to: 'group_reply_to_group',
  // Who may create subgroups and polls: the moderators (manage_subgroups, manage_polls in perms.ts).
  subgroup_access: 'sub_group_moderators',
  polls_access: 'polls_access_limited',
  // Members see the calendar, files, databases, wiki, photos and directory (perms.ts MEMBER_VISIBLE).
  calendar_access: 'group_access_members',
  files_access: 'group_access_members',
  database_access: 'group_access_members',
  wiki_access: 'group_access_members',
  photos_access: 'group_access_members',
  member_directory_access: 'group_access_members',
  handle_attachments: 'group_attachments_allowed',
  handle_virus: 'handle_virus_block',
  plan: 'group_plan_basic',
  max_photo_size_email: 'max_photo_size_ex_small',
  max_photo_size_photos: 'max_photo_size_ex_small',
  max_photo_size_databases: 'max_photo_size_ex_small',
  max_photo_size_wiki_images: 'max_photo_size_ex_small',
  // Times are answered in 24-hour ISO 8601, dates year first.
  default_time_pref: 'military_time',
  default_date_pref: 'international_date',
  event_summary_schedule: 'event_summary_monthly',
} as const;

/** The group object of spec 2.6 (every field of its table); `perms` is the caller's. */
export function presentGroup(store: Store, group: Group, baseUrl: string, perms: Record<string, unknown>): Record<string, unknown> {
  const s = group.settings;
  const messages = store.messagesByGroup.get(group.id) ?? [];
  const members = [...store.subscriptions.values()].filter((sub) => sub.groupId === group.id && !sub.removed);
  const openChats = [...store.chats.values()].filter((chat) => chat.groupId === group.id && !chat.isClosed);
  const topics = [...store.topics.values()].filter((topic) => topic.groupId === group.id);
  const last = messages.at(-1);
  return {
    object: 'group',
    id: wireId(group.id),
    created: isoTime(group.created),
    updated: isoTime(group.updated),
    title: group.title,
    name: group.name,
    nice_group_name: group.title,
    alias: '',
    desc: group.desc,
    // Linear: `/<[^>]*>/g` scanned to the end from each `<` of a desc without `>` (#31).
    plain_desc: withoutTags(group.desc),
    subject_tag: group.subjectTag,
    footer: '',
    website: '',
    announce: s.announce,
    moderation: 'moderate_first_message',
    new_users_moderated: false,
    privacy: s.privacy,
    restricted: s.restricted,
    locked: s.locked,
    members_visible: s.membersVisible,
    chat_access: s.chatAccess,
    allow_downloads: s.allowDownloads,
    hash_tag_permissions: s.hashTagPermissions,
    default_timezone: group.defaultTimezone,
    email_address: `${group.name}@groups.local`,
    group_url: `${baseUrl}/g/${encodeURIComponent(group.name)}`,
    cover_photo_url: '',
    icon_url: '',
    has_cover_photo: false,
    has_icon: false,
    parent_group_id: wireId(parentGroupOf(store, group)?.id ?? '0'),
    org_id: wireId('0'),
    sticky_wiki_page_id: wireId('0'),
    subgroupcategoryid: wireId('0'),
    subs_count: members.length,
    pending_subs_count: 0,
    pending_msgs_count: 0,
    open_chats_count: openChats.length,
    threads_count: topics.length,
    messages_count: messages.length,
    most_recent_message: last ? isoTime(last.created) : UNSET_TIME,
    ...FIXED_SETTINGS,
    perms,
  };
}
