import { z } from 'zod';
import { readYamlFile } from '../config/yaml-source.js';
import { hashPassword } from './auth.js';
import type { Clock } from './clock.js';
import type { Attachment, Group, GroupSettings, User } from './model.js';
import { PERM_FLAGS } from './perms.js';
import type { Store } from './store.js';
import { ActivityRecorder } from './activity.js';
import { CHAT_MSG_CLOSED, CHAT_MSG_NORMAL } from './chat-messages.js';

/** A seed that names something it does not define. */
export class SeedError extends Error {}

const duration = z.string().regex(/^\d+(\.\d+)?[smhd]$/, 'a duration like 90s, 15m, 2h or 3d');

const attachmentSchema = z.strictObject({
  filename: z.string().min(1),
  media_type: z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, 'a media type like text/plain').default('text/plain'),
  content: z.string().optional(),
  content_base64: z.string().optional(),
});

const messageSchema = z.strictObject({
  from: z.email(),
  body: z.string(),
  html: z.boolean().default(false),
  ago: duration.optional(),
  attachments: z.array(attachmentSchema).default([]),
});

const chatSchema = z.strictObject({
  subject: z.string().min(1).max(255),
  desc: z.string().default(''),
  owner: z.email(),
  closed: z.boolean().default(false),
  members: z.array(z.email()).default([]),
  history: z.array(z.strictObject({ from: z.email(), message: z.string().min(1), ago: duration.optional() })).default([]),
});

const groupSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_+.-]*$/, 'a group name (letters, digits, _ + . -)'),
  title: z.string().optional(),
  desc: z.string().default(''),
  subject_tag: z.string().optional(),
  timezone: z.string().default('UTC'),
  settings: z.strictObject({
    privacy: z.enum(['group_privacy_none', 'group_privacy_archives', 'group_privacy_all']).default('group_privacy_archives'),
    members_visible: z.enum(['group_view_members_anyone', 'group_view_members_subscribers', 'group_view_members_moderators'])
      .default('group_view_members_subscribers'),
    chat_access: z.enum(['group_access_members', 'group_access_limited', 'group_access_none']).default('group_access_members'),
    allow_downloads: z.enum(['allow_downloads_by_members', 'allow_downloads_by_moderators', 'allow_downloads_none'])
      .default('allow_downloads_by_members'),
    hash_tag_permissions: z.enum(['hash_tag_create_anyone', 'hash_tag_create_mods_bounce']).default('hash_tag_create_mods_bounce'),
    announce: z.boolean().default(false),
    locked: z.boolean().default(false),
    restricted: z.boolean().default(false),
  }).prefault({}), // prefault: the inner defaults apply when settings are left out
  members: z.array(z.strictObject({
    email: z.email(),
    role: z.enum(['owner', 'moderator', 'member', 'banned']).default('member'),
    grants: z.array(z.enum(PERM_FLAGS)).default([]),
    signature: z.string().default(''),
  })).default([]),
  hashtags: z.array(z.strictObject({ name: z.string().min(1), description: z.string().default(''), color: z.string().default('tag_antique_pink') }))
    .default([]),
  topics: z.array(z.strictObject({
    subject: z.string().min(1),
    hashtags: z.array(z.string()).default([]),
    sticky: z.boolean().default(false),
    closed: z.boolean().default(false),
    messages: z.array(messageSchema).min(1),
  })).default([]),
  chats: z.array(chatSchema).default([]),
});

/** The shape of `--seed FILE` (YAML) and of the built-in demo seed. */
export const seedSchema = z.strictObject({
  users: z.array(z.strictObject({
    email: z.email(),
    password: z.string().min(1),
    full_name: z.string().min(1),
    user_name: z.string().optional(),
    timezone: z.string().default('UTC'),
    two_factor_secret: z.string().regex(/^[A-Z2-7]+=*$/i, 'a base32 secret').optional(),
  })).default([]),
  groups: z.array(groupSchema).default([]),
});

export type Seed = z.input<typeof seedSchema>;
type ParsedSeed = z.output<typeof seedSchema>;

export async function readSeedFile(file: string): Promise<ParsedSeed> {
  return readYamlFile(file, seedSchema);
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 };

function agoMs(text: string | undefined, fallback: number): number {
  if (!text) return fallback;
  return Number(text.slice(0, -1)) * (UNIT_MS[text.slice(-1)] ?? 0);
}

/**
 * Loads a seed into an empty store. Seeded content is dated in the past (by `ago`, or spread over the
 * last days in the order given) so date filters have something to find.
 */
export function applySeed(store: Store, clock: Clock, input: Seed): void {
  const seed = seedSchema.parse(input);
  const now = clock.now();
  const activity = new ActivityRecorder(store, clock);
  const users = new Map<string, User>();
  const userOf = (email: string): User => {
    // Users of the seed itself, or (for the admin API's groups) users the service already has.
    const user = users.get(email.toLowerCase()) ?? store.usersByEmail.get(email.toLowerCase());
    if (!user) throw new SeedError(`seed names ${email}, who is not among its users`);
    return user;
  };
  for (const u of seed.users) {
    const user = store.addUser({
      email: u.email, passwordHash: hashPassword(u.password), fullName: u.full_name,
      userName: u.user_name ?? u.email.split('@')[0]!, timezone: u.timezone, twoFactorSecret: u.two_factor_secret,
      created: now - 90 * UNIT_MS.d!, updated: now - 90 * UNIT_MS.d!, aboutMe: '', location: '', website: '',
      profilePrivacy: 'profile_members',
    });
    users.set(u.email.toLowerCase(), user);
  }
  // Every address a group names must resolve before anything is added, so a bad seed leaves no half.
  for (const g of seed.groups) {
    const named = [...g.members.map((m) => m.email), ...g.topics.flatMap((t) => t.messages.map((m) => m.from)),
      ...g.chats.flatMap((c) => [c.owner, ...c.members, ...c.history.map((h) => h.from)])];
    named.forEach(userOf);
  }
  for (const g of seed.groups) {
    const s = g.settings;
    const settings: GroupSettings = {
      privacy: s.privacy, membersVisible: s.members_visible, chatAccess: s.chat_access, allowDownloads: s.allow_downloads,
      hashTagPermissions: s.hash_tag_permissions, announce: s.announce, locked: s.locked, restricted: s.restricted,
    };
    const created = now - 60 * UNIT_MS.d!;
    const group = store.addGroup({
      name: g.name, title: g.title ?? g.name, desc: g.desc, subjectTag: g.subject_tag ?? g.name,
      defaultTimezone: g.timezone, settings, created, updated: created,
    });
    for (const m of g.members) {
      const user = userOf(m.email);
      const sub = store.addSubscription({
        userId: user.id, groupId: group.id, role: m.role, grants: m.grants, created, updated: created,
        signature: m.signature, moderatorNotes: '', approvedPosts: 0,
      });
      activity.record(group, m.role === 'banned' ? 'member_banned' : 'member_joined', user,
        m.role === 'banned' ? 'was banned' : 'joined the group', { sub, via: 'via_web' });
    }
    seedTopics(store, group, g, userOf, now);
    seedChats(store, group, g.chats, userOf, now);
  }
}

function seedTopics(store: Store, group: Group, g: ParsedSeed['groups'][number], userOf: (e: string) => User, now: number) {
  const tagIds = new Map<string, string>();
  const tagFor = (name: string, when: number): string => {
    const key = name.replace(/^#/, '').toLowerCase();
    let id = tagIds.get(key);
    if (!id) {
      const declared = g.hashtags.find((h) => h.name.replace(/^#/, '').toLowerCase() === key);
      id = store.addHashtag({
        groupId: group.id, name: name.replace(/^#/, ''), description: declared?.description ?? '',
        colorName: declared?.color ?? 'tag_antique_pink', colorHex: '#e8b4b8', created: when, lastMessageDate: when,
      }).id;
      tagIds.set(key, id);
    }
    return id;
  };
  for (const h of g.hashtags) tagFor(h.name, now - 30 * UNIT_MS.d!);
  const total = g.topics.reduce((sum, t) => sum + t.messages.length, 0);
  let index = 0;
  let msgNum = 0;
  for (const t of g.topics) {
    const names = [...t.hashtags, ...[...t.subject.matchAll(/#([\w-]+)/g)].map((m) => m[1]!)];
    const firstAt = now - agoMs(t.messages[0]!.ago, (total - index) * 6 * UNIT_MS.h!);
    const hashtagIds = [...new Set(names.map((name) => tagFor(name, firstAt)))];
    const topic = store.addTopic({
      groupId: group.id, userId: userOf(t.messages[0]!.from).id, subject: t.subject, hashtagIds, isSticky: t.sticky,
      isClosed: t.closed, isModerated: false, created: firstAt, updated: firstAt, mostRecentMessage: firstAt,
    });
    t.messages.forEach((m, position) => {
      const created = now - agoMs(m.ago, (total - index) * 6 * UNIT_MS.h!);
      index += 1;
      msgNum += 1;
      const attachments: Attachment[] = m.attachments.map((a, i) => ({
        id: String(i + 1), filename: a.filename, mediaType: a.media_type,
        content: a.content_base64 ?? Buffer.from(a.content ?? '').toString('base64'),
      }));
      store.addMessage({
        groupId: group.id, topicId: topic.id, userId: userOf(m.from).id, msgNum,
        subject: position === 0 ? t.subject : `Re: ${t.subject}`, body: m.body, isPlainText: !m.html, isReply: position > 0,
        hashtagIds, attachments, created, updated: created,
      });
      topic.mostRecentMessage = Math.max(topic.mostRecentMessage, created);
      topic.updated = topic.mostRecentMessage;
      for (const id of hashtagIds) {
        const tag = store.hashtags.get(id);
        if (tag) tag.lastMessageDate = Math.max(tag.lastMessageDate, created);
      }
    });
  }
}

function seedChats(store: Store, group: Group, chats: ParsedSeed['groups'][number]['chats'], userOf: (e: string) => User, now: number) {
  for (const c of chats) {
    const owner = userOf(c.owner);
    const created = now - 7 * UNIT_MS.d!;
    const chat = store.addChat({
      groupId: group.id, userId: owner.id, subject: c.subject, desc: c.desc, isClosed: c.closed, created, updated: created,
    });
    for (const email of new Set([c.owner, ...c.members])) {
      store.addChatSub({ chatId: chat.id, groupId: group.id, userId: userOf(email).id, lastMsgSeen: 0, created, updated: created });
    }
    c.history.forEach((line, i) => {
      const at = now - agoMs(line.ago, (c.history.length - i) * 10 * UNIT_MS.m!);
      store.addChatMessage({
        chatId: chat.id, groupId: group.id, userId: userOf(line.from).id, type: CHAT_MSG_NORMAL, message: line.message,
        msgNum: i + 1, version: 1, created: at,
      });
    });
    if (c.closed) {
      // A closed chat's history ends with the closing notice, as one closed through updatechat does.
      store.addChatMessage({
        chatId: chat.id, groupId: group.id, userId: owner.id, type: CHAT_MSG_CLOSED, message: 'This chat has been closed.',
        msgNum: c.history.length + 1, version: 1, created: now - UNIT_MS.m!,
      });
    }
  }
}
