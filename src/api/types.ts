/**
 * The resources of spec part 2, as the client sees them. Every id is an opaque string: the client
 * turns integer ids into their exact decimal text (every digit kept, even above 2^53) and sends them
 * back unchanged. Timestamps are RFC 3339 strings.
 */

/** An identifier: an opaque string of up to 255 characters, compared case-sensitively. */
export type Id = string;
export type Timestamp = string;

/** A group is named by exactly one of its id or its name (spec 1.6). */
export type GroupRef = { group_id: Id; group_name?: never } | { group_name: string; group_id?: never };
/** Operations where the group is optional (gettopics, getdrafts). */
export type OptionalGroupRef = GroupRef | { group_id?: never; group_name?: never };

export interface Perms {
  object: 'perms';
  [flag: string]: boolean | string;
}

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
  mod_permissions: string;
  email: string;
  user_status: string;
  user_name: string;
  timezone: string;
  full_name: string;
  about_me: string;
  location: string;
  website: string;
  profile_privacy: string;
  moderator_notes: string;
  use_signature: boolean;
  use_signature_email: boolean;
  [field: string]: unknown;
}

export interface MemberInfo extends Subscription {
  object: 'member_info';
  group_name: string;
  profile_photo_url: string;
  signature: string;
  num_drafts: number;
  subs_count: number;
  nice_group_name: string;
  most_recent_message: Timestamp;
  perms: Perms;
}

export interface Group {
  object: 'group';
  id: Id;
  created: Timestamp;
  updated: Timestamp;
  title: string;
  name: string;
  nice_group_name: string;
  desc: string;
  plain_desc: string;
  subject_tag: string;
  default_timezone: string;
  email_address: string;
  subs_count: number;
  open_chats_count: number;
  threads_count: number;
  messages_count: number;
  most_recent_message: Timestamp;
  perms: Perms;
  [field: string]: unknown;
}

export interface Hashtag {
  object: 'hashtag';
  id: Id;
  created: Timestamp;
  group_id: Id;
  name: string;
  description: string;
  color_hex: string;
  color_name: string;
  topic_count: number;
  last_message_date: Timestamp;
  [field: string]: unknown;
}

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

export interface Attachment {
  id: Id;
  media_type: string;
  download_url: string;
  image_thumbnail_url: string;
  filename: string;
}

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
  attachments: Attachment[];
}

/** A search result: a message with the excerpt around the match (docs/protocol.md "Search"). */
export interface SearchHit extends Message {
  summary: string;
  num_matches: number;
}

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
  attachments?: Attachment[];
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

/** Topic lists and message lists carry these further members (spec 2.3). */
export interface TopicList extends List<Topic> {
  group_perms?: Perms;
  group?: Group;
  sub_data: MemberInfo[];
}

export interface MessageList extends List<Message> {
  group_perms: Perms;
  group: Group;
  sub_data: MemberInfo[];
  topic: Topic | null;
  cover_photo_url: string;
}

export interface Success {
  object: 'success';
  extra: string;
}

export interface LoginResult {
  user: User;
  token?: string;
}
