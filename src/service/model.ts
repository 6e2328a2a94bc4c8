/**
 * The local service's stored entities. Ids are plain strings here; they only become WireIds when a
 * response is presented. `seq` is the creation order, used as the tie-breaker that makes paging stable.
 * Times are epoch milliseconds on the service clock.
 */

export type Role = 'owner' | 'moderator' | 'member' | 'banned';

export interface User {
  id: string;
  seq: number;
  email: string;
  /** `scrypt$<salt>$<hash>`: the state file never holds a password. */
  passwordHash: string;
  fullName: string;
  userName: string;
  timezone: string;
  /** Base32 TOTP secret; when set, login needs a `twofactor` code. */
  twoFactorSecret?: string;
  created: number;
  updated: number;
  aboutMe: string;
  location: string;
  website: string;
  profilePrivacy: 'profile_private' | 'profile_members';
}

export interface GroupSettings {
  privacy: 'group_privacy_none' | 'group_privacy_archives' | 'group_privacy_all';
  membersVisible: 'group_view_members_anyone' | 'group_view_members_subscribers' | 'group_view_members_moderators';
  chatAccess: 'group_access_members' | 'group_access_limited' | 'group_access_none';
  allowDownloads: 'allow_downloads_by_members' | 'allow_downloads_by_moderators' | 'allow_downloads_none';
  hashTagPermissions: 'hash_tag_create_anyone' | 'hash_tag_create_mods_bounce';
  announce: boolean;
  locked: boolean;
  restricted: boolean;
}

export interface Group {
  id: string;
  seq: number;
  name: string;
  title: string;
  desc: string;
  subjectTag: string;
  defaultTimezone: string;
  settings: GroupSettings;
  created: number;
  updated: number;
}

export interface Subscription {
  id: string;
  seq: number;
  userId: string;
  groupId: string;
  role: Role;
  /** Permission flags granted on top of the role (e.g. `manage_chats` for a bot that is a member). */
  grants: string[];
  created: number;
  updated: number;
  /** Set when the member left or was removed: a past member, still findable by the activity log. */
  removed?: number;
  signature: string;
  moderatorNotes: string;
  approvedPosts: number;
}

export interface Hashtag {
  id: string;
  seq: number;
  groupId: string;
  name: string;
  description: string;
  colorName: string;
  colorHex: string;
  created: number;
  lastMessageDate: number;
}

export interface Attachment {
  id: string;
  filename: string;
  mediaType: string;
  /** Base64 of the content; attachments in the sandbox are small. */
  content: string;
}

export interface Topic {
  id: string;
  seq: number;
  groupId: string;
  userId: string;
  subject: string;
  hashtagIds: string[];
  isSticky: boolean;
  isClosed: boolean;
  isModerated: boolean;
  created: number;
  updated: number;
  mostRecentMessage: number;
}

export interface Message {
  id: string;
  seq: number;
  groupId: string;
  topicId: string;
  userId: string;
  /** Number within the group's archive, from 1. */
  msgNum: number;
  subject: string;
  body: string;
  isPlainText: boolean;
  isReply: boolean;
  hashtagIds: string[];
  attachments: Attachment[];
  created: number;
  updated: number;
}

export interface ActivityEntry {
  id: string;
  seq: number;
  groupId: string;
  action: string;
  /** The member the entry is about (their subscription id), if any. */
  memberInfoId?: string;
  entry: string;
  via: string;
  created: number;
}

export interface Chat {
  id: string;
  seq: number;
  groupId: string;
  userId: string;
  subject: string;
  desc: string;
  isClosed: boolean;
  created: number;
  updated: number;
}

export interface ChatSub {
  id: string;
  seq: number;
  chatId: string;
  groupId: string;
  userId: string;
  lastMsgSeen: number;
  created: number;
  updated: number;
}

export interface ChatMessage {
  id: string;
  seq: number;
  chatId: string;
  groupId: string;
  userId: string;
  type: string;
  message: string;
  msgNum: number;
  version: number;
  created: number;
}

export interface Draft {
  id: string;
  seq: number;
  groupId: string;
  userId: string;
  draftType: 'draft_type_post' | 'draft_type_reply';
  messageId?: string;
  subject: string;
  body: string;
  bodyType: 'text' | 'html';
  isSpecial: boolean;
  bccMe: boolean;
  bccAll: boolean;
  attachments: Attachment[];
  nextAttachmentId: number;
  created: number;
  updated: number;
}

export interface Session {
  id: string;
  userId: string;
  /** Value of the session cookie. */
  cookie: string;
  /** API token (64 hex characters) for Basic or Bearer auth, when login was asked for one. */
  token?: string;
  csrf: string;
  created: number;
  expires: number;
}
