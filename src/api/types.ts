/**
 * The resources of spec part 2, as the client sees them. Every id is an opaque string: the client
 * turns integer ids into their exact decimal text (every digit kept, even above 2^53) and sends them
 * back unchanged. Timestamps are RFC 3339 strings.
 */

/** An identifier: an opaque string of up to 255 characters, compared case-sensitively. */
export type Id = string;
/** A time as the service writes it: an RFC 3339 string (`2026-11-27T18:30:00Z`), kept as text so no precision is lost. */
export type Timestamp = string;

/** A group is named by exactly one of its id or its name (spec 1.6). */
export type GroupRef = { group_id: Id; group_name?: never } | { group_name: string; group_id?: never };
/** Operations where the group is optional (gettopics, getdrafts). */
export type OptionalGroupRef = GroupRef | { group_id?: never; group_name?: never };

/** The permission flags of spec 2.4 (current form); older-form flags may come too, under the index signature. */
export interface Perms {
  object: 'perms';
  archives_visible: boolean;
  members_visible: boolean;
  chat_visible: boolean;
  calendar_visible: boolean;
  files_visible: boolean;
  database_visible: boolean;
  photos_visible: boolean;
  wiki_visible: boolean;
  member_directory_visible: boolean;
  hashtags_visible: boolean;
  guidelines_visible: boolean;
  subgroups_visible: boolean;
  open_donations_visible: boolean;
  polls_visible: boolean;
  manage_subgroups: boolean;
  delete_group: boolean;
  download_archives: boolean;
  download_entire_group: boolean;
  download_members: boolean;
  view_activity: boolean;
  create_hashtags: boolean;
  manage_hashtags: boolean;
  manage_integrations: boolean;
  manage_group_settings: boolean;
  make_moderator: boolean;
  manage_member_subscription_options: boolean;
  manage_pending_members: boolean;
  remove_members: boolean;
  ban_members: boolean;
  manage_group_billing: boolean;
  manage_group_payments: boolean;
  edit_archives: boolean;
  manage_pending_messages: boolean;
  invite_members: boolean;
  can_post: boolean;
  can_vote: boolean;
  manage_polls: boolean;
  manage_photos: boolean;
  manage_members: boolean;
  manage_calendar: boolean;
  manage_chats: boolean;
  view_member_directory: boolean;
  manage_files: boolean;
  manage_wiki: boolean;
  manage_subscription: boolean;
  public_page: boolean;
  sub_page: boolean;
  mod_page: boolean;
  [flag: string]: boolean | string;
}

/** The logged-in account (spec part 5), as login answers it: its `csrf_token` signs every state-changing call. */
export interface User {
  object: 'user';
  id: Id;
  email: string;
  full_name: string;
  user_name: string;
  timezone: string;
  status: string;
  csrf_token: string;
  two_factor_enabled?: boolean;
  created?: Timestamp;
  updated?: Timestamp;
  subscriptions?: Array<{ group_id: Id; group_name: string; perms: Perms }>;
}

/** One member's subscription to a group (spec 2.5); further fields of the real service come under the index signature. */
export interface Subscription {
  object: 'subscription' | 'member_info';
  id: Id;
  user_id: Id;
  group_id: Id;
  created: Timestamp;
  updated: Timestamp;
  status: string;
  post_status: string;
  email_delivery: string;
  message_selection: string;
  auto_follow_replies: boolean;
  max_attachment_size: string;
  approved_posts: number;
  mod_status: string;
  pending_msg_notify: string;
  pending_sub_notify: string;
  sub_notify: string;
  storage_notify: string;
  sub_group_notify: string;
  message_report_notify: string;
  /** Comma-separated `sub_perm_*` values, empty if none. */
  mod_permissions: string;
  owner_msg_notify: string;
  email: string;
  user_status: string;
  user_name: string;
  timezone: string;
  full_name: string;
  about_me: string;
  location: string;
  website: string;
  /** Always in a subscription; spec 2.5 says a member_info may leave it out. */
  about_format?: string;
  /** Always in a subscription; spec 2.5 says a member_info may leave it out. */
  profile_photo_id?: string;
  profile_privacy: string;
  dont_munge_message_id: boolean;
  moderator_notes: string;
  moderator_notes_updated: Timestamp;
  use_signature: boolean;
  use_signature_email: boolean;
  [field: string]: unknown;
}

/** What member_info adds to a subscription (spec 2.5). */
export interface MemberInfoFields {
  group_name: string;
  profile_photo_url: string;
  signature: string;
  num_drafts: number;
  pending_subs: number;
  pending_msgs: number;
  subs_count: number;
  cover_photo_url: string;
  icon_url: string;
  nice_group_name: string;
  most_recent_message: Timestamp;
  perms: Perms;
}

export interface MemberInfo extends Subscription, MemberInfoFields {
  object: 'member_info';
}

/**
 * An item of `getsubs` (our extension, docs/protocol.md "Extensions"): the caller's subscription with
 * the member_info additions, so that its group's name and the caller's perms there come with it.
 */
export interface GroupSubscription extends Subscription, MemberInfoFields {
  object: 'subscription';
}

/** An item of `getdatabases` (our extension): the local service has none; the real service's fields are not shown. */
export interface Database {
  object: string;
  id: Id;
  [field: string]: unknown;
}

/**
 * The group object of spec 2.6. Settings the local service does not act on are answered with fixed
 * values (docs/protocol.md "Groups"); enum values beyond those spec 2.12 shows may come.
 */
export interface Group {
  object: 'group';
  id: Id;
  /** `0` when unset, as every id below. */
  parent_group_id: Id;
  org_id: Id;
  sticky_wiki_page_id: Id;
  subgroupcategoryid: Id;
  /** Day counts; 0 means never. */
  unmoderate_users_after: number;
  min_days_between_reposts: number;
  max_number_of_reposts: number;
  close_threads_after: number;
  moderate_threads_after: number;
  subs_count: number;
  pending_subs_count: number;
  pending_msgs_count: number;
  open_chats_count: number;
  threads_count: number;
  messages_count: number;
  created: Timestamp;
  updated: Timestamp;
  most_recent_message: Timestamp;
  title: string;
  name: string;
  nice_group_name: string;
  alias: string;
  /** HTML. */
  desc: string;
  plain_desc: string;
  subject_tag: string;
  footer: string;
  website: string;
  org_domain: string;
  cover_photo_url: string;
  icon_url: string;
  group_url: string;
  default_timezone: string;
  email_address: string;
  announce: boolean;
  new_users_moderated: boolean;
  restricted: boolean;
  allow_non_subs_to_post: boolean;
  force_html_emails: boolean;
  normalize_html_emails: boolean;
  remove_other_reply_options: boolean;
  /** Spelled so in the spec. */
  seperate_footers: boolean;
  plain_text_only: boolean;
  locked: boolean;
  has_cover_photo: boolean;
  has_icon: boolean;
  hash_tags_required: boolean;
  bounce_attachments: boolean;
  allow_photos_in_files: boolean;
  allow_reposts: boolean;
  auto_follow_replies_default: boolean;
  default_monday_start: boolean;
  disable_edits: boolean;
  disable_no_email: boolean;
  auto_close_threads: boolean;
  auto_moderate_threads: boolean;
  allow_parent_subs_to_post: boolean;
  send_event_summaries: boolean;
  send_invites_on_join: boolean;
  perms: Perms;
  // Enumerated settings (spec 2.12).
  moderation: string;
  reply_to: string;
  privacy: string;
  members_visible: string;
  allow_downloads: string;
  hash_tag_permissions: string;
  email_delivery_default: string;
  message_selection_default: string;
  max_attachment_size_default: string;
  subgroup_access: string;
  calendar_access: string;
  files_access: string;
  database_access: string;
  wiki_access: string;
  photos_access: string;
  member_directory_access: string;
  chat_access: string;
  polls_access: string;
  handle_attachments: string;
  handle_virus: string;
  plan: string;
  max_photo_size_email: string;
  max_photo_size_photos: string;
  max_photo_size_databases: string;
  max_photo_size_wiki_images: string;
  default_time_pref: string;
  default_date_pref: string;
  event_summary_schedule: string;
  [field: string]: unknown;
}

/** A group's hashtag (spec 2.8): the label of topics, with its posting and moderation rules. */
export interface Hashtag {
  object: 'hashtag';
  id: Id;
  created: Timestamp;
  group_id: Id;
  name: string;
  /** Its members: not shown in the spec; `{}` from the local service. */
  alias: Record<string, unknown>;
  mods_only_post: boolean;
  mods_only_replies: boolean;
  no_email: boolean;
  moderated: boolean;
  special: boolean;
  replies_unmoderated: boolean;
  locked: boolean;
  close_instead_of_delete: boolean;
  muted: boolean;
  followed: boolean;
  until: string;
  description: string;
  color_hex: string;
  color_name: string;
  reply_to: string;
  topic_count: number;
  last_message_date: Timestamp;
  [field: string]: unknown;
}

/** A thread of the group's messages (spec 2.7), as the topic lists and gettopic return it. */
export interface Topic {
  object: 'topic';
  id: Id;
  created: Timestamp;
  updated: Timestamp;
  group_id: Id;
  group_subject_tag: string;
  subject: string;
  summary: string;
  name: string;
  profile_photo_url: string;
  num_messages: number;
  is_sticky: boolean;
  is_moderated: boolean;
  is_closed: boolean;
  has_attachments: boolean;
  reply_to: string;
  most_recent_message: Timestamp;
  hashtags: Hashtag[];
}

/**
 * A file attached to a message or a draft (a message's `attachments`), as the service describes it: where to download it
 * and its thumbnail. (The gateway's own file shape is the `Attachment` of `groupwire`'s media exports.)
 */
export interface MessageAttachment {
  id: Id;
  media_type: string;
  download_url: string;
  image_thumbnail_url: string;
  filename: string;
}

/** A message of the group's archive (spec 2.9): its topic, its number in the group, the body as HTML. */
export interface Message {
  object: 'message';
  id: Id;
  created: Timestamp;
  updated: Timestamp;
  user_id: Id;
  group_id: Id;
  topic_id: Id;
  msg_num: number;
  subject: string;
  subject_with_tags?: string;
  body: string;
  quoted: string;
  remainder: string;
  snippet: string;
  name: string;
  profile_photo_url: string;
  is_plain_text: boolean;
  is_reply?: boolean;
  has_liked: boolean;
  is_closed: boolean;
  is_moderated: boolean;
  can_repost: boolean;
  num_likes: number;
  reply_to: string;
  hashtags: Hashtag[];
  poll_id: Id;
  attachments: MessageAttachment[];
}

/** A search result: a message with the excerpt around the match (docs/protocol.md "Search"). */
export interface SearchHit extends Message {
  summary: string;
  num_matches: number;
}

/** One line of a group's activity log (spec 2.10): who did what, readable by moderators (`view_activity`). */
export interface ActivityLogEntry {
  object: 'activity_log';
  id: Id;
  created: Timestamp;
  group_id: Id;
  entry: string;
  via: string;
  /** Additions of the local service (docs/protocol.md "Activity log"). */
  action?: string;
  member_info_id?: Id;
}

/** The caller's membership of a chat (spec 2.11): needed to receive its messages; `last_msg_seen` is its read mark. */
export interface ChatSub {
  object: 'chat_sub';
  id: Id;
  created: Timestamp;
  updated: Timestamp;
  user_id: Id;
  group_id: Id;
  chat_id: Id;
  last_msg_seen: number;
}

/** A chat of a group (spec 2.11): its subject, whether it is closed, and the caller's `chat_sub` when subscribed. */
export interface Chat {
  object: 'chat';
  id: Id;
  created: Timestamp;
  updated: Timestamp;
  user_id: Id;
  group_id: Id;
  subject: string;
  desc: string;
  is_closed: boolean;
  num_messages: number;
  chat_sub: ChatSub | null;
}

/** One message of a chat (spec 2.11), as the chat socket and getchathistory deliver it; `msg_num` orders them. */
export interface ChatMessage {
  object: 'chat_message';
  id: Id;
  created: Timestamp;
  version: number;
  user_id: Id;
  group_id: Id;
  chat_id: Id;
  /** `chat_msg_type_normal`, `chat_msg_type_closed`, or a type added later. */
  type: string;
  message: string;
  msg_num: number;
  display_name: string;
  user_name: string;
  profile_photo_url: string;
  profile_privacy: string;
  email: string;
}

/** A message being written (spec 2.11, 4.4): created by newdraft, saved by updatedraft, sent by postdraft. */
export interface Draft {
  object: 'draft';
  id: Id;
  created: Timestamp;
  updated: Timestamp;
  user_id: Id;
  group_id: Id;
  draft_type: 'draft_type_post' | 'draft_type_reply';
  subject: string;
  body: string;
  body_type: string;
  is_special: boolean;
  num_attachments: number;
  next_attachment_id: number;
  message_id: Id;
  bcc_me: boolean;
  bcc_all: boolean;
  attachments?: MessageAttachment[];
}

/** The list object of spec 2.3. `data` may be null from the real service; the client turns it into []. */
export interface List<T> {
  object: 'list';
  total_count: number;
  start_item: number;
  end_item: number;
  has_more: boolean;
  next_page_token: Id;
  sort_field?: string;
  second_order?: string;
  query?: string;
  sort_dir?: string;
  data: T[];
}

/**
 * Topic lists and message lists carry these further members (spec 2.3). Without a group, gettopics
 * describes the group of the page's first topic; `null` only when the caller has no group to list.
 */
export interface TopicList extends List<Topic> {
  group_perms: Perms | null;
  group: Group | null;
  sub_data: MemberInfo[];
}

/** The list gettopic and getmessages answer: a page of messages with the group, the caller's rights and the topic. */
export interface MessageList extends List<Message> {
  group_perms: Perms;
  group: Group;
  sub_data: MemberInfo[];
  /** gettopic: the topic. getmessages: the topic of the page's first message; null only for a group without topics. */
  topic: Topic | null;
  cover_photo_url: string;
}

/** The answer of a call that returns nothing else (spec 2.1): `extra` may say what was done. */
export interface Success {
  object: 'success';
  extra: string;
}

/** The error object of spec 2.2, as the service answers it; the client throws it as a GroupsError. */
export interface ErrorObject {
  object: 'error';
  type: string;
  extra: string;
}

/** What logging in gives: the user, and the API token when one was asked for (docs/protocol.md "Login"). */
export interface LoginResult {
  user: User;
  token?: string;
}
