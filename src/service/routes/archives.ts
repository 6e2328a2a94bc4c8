import type { Caller } from '../auth.js';
import { foundGroupScope, seenScope } from '../visibility.js';
import type { GroupScope, ServiceCore } from '../core.js';
import { badRequest } from '../errors.js';
import type { Message, Topic } from '../model.js';
import { defineOp, type Operation } from '../operation.js';
import { listView, type SortSpec } from '../paging.js';
import type { Params } from '../params.js';

/** Our decisions (spec 4.0 leaves the sort fields of these lists open). `id` orders by creation. */
const TOPIC_SORT: SortSpec<Topic> = {
  fields: {
    most_recent_message: (t) => t.mostRecentMessage,
    // `activity`: what a digest client sends (the real service takes it), the same order.
    activity: (t) => t.mostRecentMessage,
    created: (t) => t.created,
    updated: (t) => t.updated,
    id: (t) => t.seq,
  },
  defaultField: 'most_recent_message',
  defaultDir: 'desc',
};

const MESSAGE_FIELDS: SortSpec<Message>['fields'] = {
  created: (m) => m.created,
  updated: (m) => m.updated,
  msg_num: (m) => m.msgNum,
  id: (m) => m.seq,
};

/** A topic reads as a conversation, oldest first; a group's message list shows the newest first. */
const TOPIC_MESSAGE_SORT: SortSpec<Message> = { fields: MESSAGE_FIELDS, defaultField: 'created', defaultDir: 'asc' };
const GROUP_MESSAGE_SORT: SortSpec<Message> = { fields: MESSAGE_FIELDS, defaultField: 'created', defaultDir: 'desc' };

/** The members spec 2.3 adds to archive lists for one named group. */
function groupMembers(core: ServiceCore, scope: GroupScope): Record<string, unknown> {
  return {
    group_perms: core.present.perms(scope.group, scope.sub),
    group: core.present.group(scope.group, scope.sub),
    sub_data: scope.sub ? [core.present.subscription(scope.sub, true)] : [],
  };
}

/** The group a call names, once the caller is known to see its archives. */
function visibleGroup(core: ServiceCore, params: Params, caller: Caller): GroupScope {
  const scope = core.groupScope(params, caller);
  core.require(scope, 'archives_visible');
  return scope;
}

/** The topic a group's message list carries: that of `first`, else the group's most recently active. */
function describedTopic(core: ServiceCore, groupId: string, first: Message | undefined): Record<string, unknown> | null {
  let topic = first ? core.store.topics.get(first.topicId) : undefined;
  if (!topic) {
    for (const candidate of core.store.topics.values()) {
      if (candidate.groupId !== groupId) continue;
      if (!topic || candidate.mostRecentMessage > topic.mostRecentMessage) topic = candidate;
    }
  }
  return topic ? core.present.topic(topic) : null;
}

function messagesOf(core: ServiceCore, groupId: string): Message[] {
  return core.store.messagesByGroup.get(groupId) ?? [];
}

/**
 * `getmessage`, our extension (docs/protocol.md "Extensions"): one message by `message_id`, or by the
 * group (`group_id` / `group_name`) and its `msg_num`. A message of a group the caller may not see
 * answers as an unknown one, as gettopic does.
 */
function oneMessage(core: ServiceCore, params: Params, caller: Caller): Message {
  if (params.has('message_id')) {
    const message = core.store.messages.get(params.requiredId('message_id'));
    const scope = seenScope(core, message && core.store.groups.get(message.groupId), caller, () => badRequest('invalid message_id'));
    core.require(scope, 'archives_visible');
    return message!;
  }
  if (!params.has('msg_num')) throw badRequest('invalid message_id');
  const scope = foundGroupScope(core, params, caller);
  core.require(scope, 'archives_visible');
  const msgNum = params.integer('msg_num', 1);
  const message = messagesOf(core, scope.group.id).find((m) => m.msgNum === msgNum);
  if (!message) throw badRequest('invalid msg_num');
  return message;
}

export const archiveOperations: Operation[] = [
  defineOp('gettopics', 'GET', ({ core, params, caller }) => {
    if (params.has('group_id') || params.has('group_name')) {
      const group = visibleGroup(core, params, caller);
      const topics = [...core.store.topics.values()].filter((t) => t.groupId === group.group.id);
      const page = core.pager.page(topics, params, TOPIC_SORT, `gettopics ${caller.user.id} ${group.group.id}`);
      return listView(page, page.items.map((t) => core.present.topic(t)), groupMembers(core, group));
    }
    // No group named: spec 4.2's "the caller's set", read as the groups the caller is subscribed to
    // and may read the archives of. Public archives of groups the caller never joined are left out, so
    // the list is the caller's own feed rather than the whole service.
    const groups = [...core.store.groups.values()]
      .map((group) => core.scopeOf(group, caller))
      .filter((g) => g.sub !== undefined && g.perms.archives_visible);
    const ids = new Set(groups.map((g) => g.group.id));
    const topics = [...core.store.topics.values()].filter((t) => ids.has(t.groupId));
    const page = core.pager.page(topics, params, TOPIC_SORT, `gettopics ${caller.user.id} *`);
    const subData = groups.flatMap((g) => (g.sub ? [core.present.subscription(g.sub, true)] : []));
    // Spec 2.3 gives a topic list group_perms and group, which describe one group: the group of the
    // page's first topic (on an empty page the first of the caller's groups; null when there is none).
    // Each listed group's perms are also in its member_info in sub_data.
    const firstGroupId = page.items[0]?.groupId;
    const described = groups.find((g) => g.group.id === firstGroupId) ?? groups[0];
    return listView(page, page.items.map((t) => core.present.topic(t)), {
      group_perms: described ? core.present.perms(described.group, described.sub) : null,
      group: described ? core.present.group(described.group, described.sub) : null,
      sub_data: subData,
    });
  }),

  defineOp('gettopic', 'GET', ({ core, params, caller }) => {
    const topic = core.store.topics.get(params.requiredId('topic_id'));
    const group = topic && core.store.groups.get(topic.groupId);
    // A topic of a group the caller may not see answers as an unknown one (docs/protocol.md).
    if (!topic || !group) throw badRequest('invalid topic_id');
    const scope = seenScope(core, group, caller, () => badRequest('invalid topic_id'));
    core.require(scope, 'archives_visible');
    const messages = messagesOf(core, group.id).filter((m) => m.topicId === topic.id);
    const page = core.pager.page(messages, params, TOPIC_MESSAGE_SORT, `gettopic ${caller.user.id} ${topic.id}`);
    return listView(page, page.items.map((m) => core.present.message(m)), {
      ...groupMembers(core, scope),
      topic: core.present.topic(topic),
      cover_photo_url: '',
    });
  }),

  defineOp('getmessages', 'GET', ({ core, params, caller }) => {
    const scope = visibleGroup(core, params, caller);
    const page = core.pager.page(messagesOf(core, scope.group.id), params, GROUP_MESSAGE_SORT,
      `getmessages ${caller.user.id} ${scope.group.id}`);
    return listView(page, page.items.map((m) => core.present.message(m)), {
      ...groupMembers(core, scope),
      // Spec 2.3: group messages carry the topic. A group's messages span many topics, so it is the
      // topic of the page's first message (on an empty page the group's most recently active topic;
      // null only when the group has no topic at all).
      topic: describedTopic(core, scope.group.id, page.items[0]),
      cover_photo_url: '',
    });
  }),

  defineOp('getmessage', 'GET', ({ core, params, caller }) => core.present.message(oneMessage(core, params, caller))),
];
