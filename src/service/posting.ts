import type { ServiceCore } from './core.js';
import type { Attachment, Group, Message, Topic, User } from './model.js';

/** Hashtags named `#word` in a subject; a `#` inside a word ("issue#12", "&#39;") is no tag. */
export function hashtagNames(subject: string): string[] {
  return [...subject.matchAll(/(?<![\w&])#([\w-]+)/g)].map((match) => match[1]!);
}

/** The group's hashtag ids for the names, creating missing ones (the caller checked the permission). */
export function hashtagIdsFor(core: ServiceCore, group: Group, names: string[]): string[] {
  const now = core.now();
  const ids = names.map((name) => {
    const existing = [...core.store.hashtags.values()].find(
      (tag) => tag.groupId === group.id && tag.name.toLowerCase() === name.toLowerCase(),
    );
    return (existing ?? core.store.addHashtag({
      groupId: group.id, name, description: '', colorName: 'tag_antique_pink', colorHex: '#e8b4b8', created: now, lastMessageDate: now,
    })).id;
  });
  return [...new Set(ids)];
}

/** Appends a message to a topic with the group's next msg_num, updating the topic and its hashtags. */
export function appendMessage(core: ServiceCore, topic: Topic, user: User, fields: {
  subject: string;
  body: string;
  isPlainText: boolean;
  isReply: boolean;
  attachments?: Attachment[];
}): Message {
  const now = core.now();
  const previous = core.store.messagesByGroup.get(topic.groupId)?.at(-1);
  const message = core.store.addMessage({
    groupId: topic.groupId, topicId: topic.id, userId: user.id, msgNum: (previous?.msgNum ?? 0) + 1,
    subject: fields.subject, body: fields.body, isPlainText: fields.isPlainText, isReply: fields.isReply,
    // A copy: retagging the topic later must not retag the messages already in it.
    hashtagIds: [...topic.hashtagIds], attachments: fields.attachments ?? [], created: now, updated: now,
  });
  topic.mostRecentMessage = now;
  topic.updated = now;
  for (const id of topic.hashtagIds) {
    const tag = core.store.hashtags.get(id);
    if (tag) tag.lastMessageDate = now;
  }
  return message;
}

/** A new topic with its first message. */
export function startTopic(core: ServiceCore, group: Group, user: User, fields: {
  subject: string;
  body: string;
  isPlainText: boolean;
  hashtagIds: string[];
  attachments?: Attachment[];
}): { topic: Topic; message: Message } {
  const now = core.now();
  const topic = core.store.addTopic({
    groupId: group.id, userId: user.id, subject: fields.subject, hashtagIds: fields.hashtagIds, isSticky: false,
    isClosed: false, isModerated: false, created: now, updated: now, mostRecentMessage: now,
  });
  const message = appendMessage(core, topic, user, { ...fields, isReply: false });
  return { topic, message };
}
