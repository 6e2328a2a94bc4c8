import { isoTime } from './clock.js';
import { htmlToText } from '../api/html-text.js';
import { wireId } from './ids.js';
import type {
  ActivityEntry, Attachment, Chat, ChatMessage, ChatSub, Draft, Group, Hashtag, Message, Subscription, Topic, User,
} from './model.js';
import { computePerms } from './perms.js';
import { presentGroup } from './present-group.js';
import { presentSubscription } from './present-subscription.js';
import type { Store } from './store.js';

/** The group and the subscription objects live in files of their own (present-group.ts, present-subscription.ts). */
export { UNSET_TIME } from './present-group.js';

type View = Record<string, unknown>;

/**
 * Turns stored entities into the wire objects of spec part 2 (every field of each table; checked by
 * test/spec-objects.test.ts against the spec itself). Ids become WireIds here and nowhere else,
 * so the serializer can write them in the configured style.
 */
export class Presenter {
  constructor(
    private readonly store: Store,
    private readonly baseUrl: () => string,
  ) {}

  user(user: User, csrf: string): View {
    const subscriptions = [...this.store.subscriptions.values()]
      .filter((sub) => sub.userId === user.id && sub.removed === undefined)
      .map((sub) => {
        const group = this.store.groups.get(sub.groupId);
        return group ? { group_id: wireId(group.id), group_name: group.name, perms: this.perms(group, sub) } : null;
      })
      .filter((entry) => entry !== null);
    return {
      object: 'user',
      id: wireId(user.id),
      created: isoTime(user.created),
      updated: isoTime(user.updated),
      email: user.email,
      full_name: user.fullName,
      user_name: user.userName,
      timezone: user.timezone,
      status: 'user_status_confirmed',
      two_factor_enabled: user.twoFactorSecret !== undefined,
      csrf_token: csrf,
      subscriptions,
    };
  }

  perms(group: Group, sub: Subscription | undefined): View {
    return { object: 'perms', ...computePerms(group, sub) };
  }

  group(group: Group, callerSub: Subscription | undefined): View {
    return presentGroup(this.store, group, this.baseUrl(), this.perms(group, callerSub));
  }

  /** The subscription object; `memberInfo` adds the member_info extras used in `sub_data`. */
  subscription(sub: Subscription, memberInfo = false): View {
    const group = this.store.groups.get(sub.groupId);
    return presentSubscription(this.store, sub, memberInfo && group ? { group, perms: this.perms(group, sub) } : undefined);
  }

  hashtag(tag: Hashtag): View {
    return {
      object: 'hashtag',
      id: wireId(tag.id),
      created: isoTime(tag.created),
      group_id: wireId(tag.groupId),
      name: tag.name,
      alias: {},
      mods_only_post: false,
      mods_only_replies: false,
      no_email: false,
      moderated: false,
      special: false,
      replies_unmoderated: false,
      locked: false,
      close_instead_of_delete: false,
      muted: false,
      followed: false,
      until: 'hashtag_delete_day',
      description: tag.description,
      color_hex: tag.colorHex,
      color_name: tag.colorName,
      reply_to: 'thread_reply_group_default',
      topic_count: [...this.store.topics.values()].filter((t) => t.hashtagIds.includes(tag.id)).length,
      last_message_date: isoTime(tag.lastMessageDate),
    };
  }

  private hashtags(ids: string[]): View[] {
    return ids.flatMap((id) => {
      const tag = this.store.hashtags.get(id);
      return tag ? [this.hashtag(tag)] : [];
    });
  }

  topic(topic: Topic): View {
    const group = this.store.groups.get(topic.groupId);
    const messages = (this.store.messagesByGroup.get(topic.groupId) ?? []).filter((m) => m.topicId === topic.id);
    const first = messages[0];
    const user = this.store.users.get(topic.userId);
    return {
      object: 'topic',
      id: wireId(topic.id),
      created: isoTime(topic.created),
      updated: isoTime(topic.updated),
      group_id: wireId(topic.groupId),
      group_subject_tag: group?.subjectTag ?? '',
      subject: topic.subject,
      summary: first ? summaryOf(first) : '',
      name: user?.fullName ?? '',
      profile_photo_url: '',
      num_messages: messages.length,
      is_sticky: topic.isSticky,
      is_moderated: topic.isModerated,
      is_closed: topic.isClosed,
      has_attachments: messages.some((m) => m.attachments.length > 0),
      reply_to: 'thread_reply_group_default',
      most_recent_message: isoTime(topic.mostRecentMessage),
      hashtags: this.hashtags(topic.hashtagIds),
    };
  }

  message(message: Message): View {
    const user = this.store.users.get(message.userId);
    const topic = this.store.topics.get(message.topicId);
    const group = this.store.groups.get(message.groupId);
    const tag = group?.subjectTag ? `[${group.subjectTag}] ` : '';
    const [quoted, remainder] = splitQuoted(message.body);
    return {
      object: 'message',
      id: wireId(message.id),
      created: isoTime(message.created),
      updated: isoTime(message.updated),
      user_id: wireId(message.userId),
      group_id: wireId(message.groupId),
      topic_id: wireId(message.topicId),
      msg_num: message.msgNum,
      subject: message.subject,
      subject_with_tags: `${tag}${message.subject}`,
      body: message.body,
      quoted,
      remainder,
      snippet: summaryOf(message),
      name: user?.fullName ?? '',
      profile_photo_url: '',
      is_plain_text: message.isPlainText,
      is_reply: message.isReply,
      has_liked: false,
      is_closed: topic?.isClosed ?? false,
      is_moderated: false,
      can_repost: false,
      num_likes: 0,
      reply_to: 'thread_reply_group_default',
      hashtags: this.hashtags(message.hashtagIds),
      poll_id: wireId('0'),
      attachments: message.attachments.map((a) => this.attachment(a, `messages/${encodeURIComponent(message.id)}`)),
    };
  }

  /** `owner` is the URL path of what holds the attachment, its id already encoded. */
  attachment(attachment: Attachment, owner: string): View {
    const url = `${this.baseUrl()}/files/${owner}/${encodeURIComponent(attachment.id)}/${encodeURIComponent(attachment.filename)}`;
    return {
      id: wireId(attachment.id),
      media_type: attachment.mediaType,
      download_url: url,
      image_thumbnail_url: attachment.mediaType.startsWith('image/') ? url : '',
      filename: attachment.filename,
    };
  }

  activity(entry: ActivityEntry): View {
    return {
      object: 'activity_log',
      id: wireId(entry.id),
      created: isoTime(entry.created),
      group_id: wireId(entry.groupId),
      action: entry.action,
      member_info_id: wireId(entry.memberInfoId ?? '0'),
      entry: entry.entry,
      via: entry.via,
    };
  }

  chat(chat: Chat, callerId: string): View {
    const sub = this.store.chatSubOf(callerId, chat.id);
    return {
      object: 'chat',
      id: wireId(chat.id),
      created: isoTime(chat.created),
      updated: isoTime(chat.updated),
      user_id: wireId(chat.userId),
      group_id: wireId(chat.groupId),
      subject: chat.subject,
      desc: chat.desc,
      is_closed: chat.isClosed,
      num_messages: this.store.chatMessages.get(chat.id)?.length ?? 0,
      chat_sub: sub ? this.chatSub(sub) : null,
    };
  }

  chatSub(sub: ChatSub): View {
    return {
      object: 'chat_sub',
      id: wireId(sub.id),
      created: isoTime(sub.created),
      updated: isoTime(sub.updated),
      user_id: wireId(sub.userId),
      group_id: wireId(sub.groupId),
      chat_id: wireId(sub.chatId),
      last_msg_seen: sub.lastMsgSeen,
    };
  }

  chatMessage(message: ChatMessage): View {
    const user = this.store.users.get(message.userId);
    return {
      object: 'chat_message',
      id: wireId(message.id),
      created: isoTime(message.created),
      version: message.version,
      user_id: wireId(message.userId),
      group_id: wireId(message.groupId),
      chat_id: wireId(message.chatId),
      type: message.type,
      message: message.message,
      msg_num: message.msgNum,
      display_name: user?.fullName ?? '',
      user_name: user?.userName ?? '',
      profile_photo_url: '',
      profile_privacy: user?.profilePrivacy ?? 'profile_members',
      email: user && user.profilePrivacy !== 'profile_private' ? user.email : '',
    };
  }

  draft(draft: Draft): View {
    return {
      object: 'draft',
      id: wireId(draft.id),
      created: isoTime(draft.created),
      updated: isoTime(draft.updated),
      user_id: wireId(draft.userId),
      group_id: wireId(draft.groupId),
      draft_type: draft.draftType,
      subject: draft.subject,
      body: draft.body,
      body_type: draft.bodyType,
      is_special: draft.isSpecial,
      num_attachments: draft.attachments.length,
      next_attachment_id: draft.nextAttachmentId,
      message_id: wireId(draft.messageId ?? '0'),
      bcc_me: draft.bccMe,
      bcc_all: draft.bccAll,
      attachments: draft.attachments.map((a) => this.attachment(a, `drafts/${encodeURIComponent(draft.id)}`)),
    };
  }
}

/** Our decision: the longest `snippet` and `summary`, in characters (code points). */
export const SNIPPET_LENGTH = 200;

/**
 * Plain-text summary of a body, for `snippet` and `summary`: an HTML body's text (tags gone, entities
 * decoded), a plain-text body as written (its `<` and `&` are text: docs/protocol.md "HTML fields"),
 * white space collapsed, cut to `length` code points. Linear in the body (issue #31 item 2).
 */
export function summarize(body: string, isPlainText: boolean, length = SNIPPET_LENGTH): string {
  const text = (isPlainText ? body : htmlToText(body)).replace(/\s+/g, ' ').trim();
  // Cut by code points, so an emoji is never split in half. 2 * length + 2 UTF-16 units hold more than
  // `length` code points whenever the text is longer than that, so the rest is never split up.
  const head = Array.from(text.slice(0, 2 * length + 2));
  return head.length > length ? `${head.slice(0, length - 1).join('')}…` : text;
}

/**
 * A message's summary, computed once per body: every read presents it again (getmessages, gettopics,
 * searcharchives, the chat's topic), and a body is up to 1 MiB. Keyed on the stored message object, so a
 * message forgotten by the store is forgotten here too; an edited body is summarised again.
 */
const summaries = new WeakMap<Message, { body: string; isPlainText: boolean; summary: string }>();

function summaryOf(message: Message): string {
  const known = summaries.get(message);
  if (known && known.body === message.body && known.isPlainText === message.isPlainText) return known.summary;
  const summary = summarize(message.body, message.isPlainText);
  summaries.set(message, { body: message.body, isPlainText: message.isPlainText, summary });
  return summary;
}

/** Splits a text body into the part quoting an earlier message (lines starting with `>`) and the rest. */
function splitQuoted(body: string): [string, string] {
  const lines = body.split('\n');
  const quoted = lines.filter((line) => line.startsWith('>'));
  const rest = lines.filter((line) => !line.startsWith('>'));
  return [quoted.join('\n'), rest.join('\n')];
}
