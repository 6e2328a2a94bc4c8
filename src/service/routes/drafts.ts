import type { Caller } from '../auth.js';
import type { GroupScope, ServiceCore } from '../core.js';
import { badRequest } from '../errors.js';
import { sanitizeHtml } from '../html-sanitize.js';
import type { Attachment, Draft, Group, Message, Topic } from '../model.js';
import { defineOp, EMPTY_OK, type Operation, type UploadedFile } from '../operation.js';
import { listView, type SortSpec } from '../paging.js';
import type { Params } from '../params.js';
import { appendMessage, hashtagIdsFor, hashtagNames, startTopic } from '../posting.js';
import { seenGroupScope } from '../visibility.js';

/** Our decisions (spec part 8 leaves them open): subject up to 255 characters, body up to 1 MB. */
const MAX_SUBJECT = 255;
const MAX_BODY_BYTES = 1024 * 1024;
/**
 * Our decision (docs/protocol.md "Drafts"): a draft holds at most this many attachments and bytes of
 * them in total, however many addattachments calls bring them (each call is also bounded on its own).
 */
export const MAX_DRAFT_ATTACHMENTS = 20;
export const MAX_DRAFT_ATTACHMENT_BYTES = 25 * 1024 * 1024;
/** Our decision: the drafts one user keeps at once (all groups); newdraft past it is refused. */
export const MAX_DRAFTS_PER_USER = 50;
const DRAFT_TYPES = ['draft_type_post', 'draft_type_reply'] as const;
const BODY_TYPES = ['text', 'html'] as const;

const DRAFT_SORT: SortSpec<Draft> = {
  fields: { updated: (d) => d.updated, created: (d) => d.created, id: (d) => d.seq },
  defaultField: 'updated',
  defaultDir: 'desc',
};

/** The fields newdraft and updatedraft both take, validated before anything is changed. */
interface DraftEdits {
  subject?: string;
  body?: string;
  bodyType?: Draft['bodyType'];
  bccMe?: boolean;
  bccAll?: boolean;
}

function readEdits(params: Params): DraftEdits {
  const subject = params.string('subject')?.trim();
  if (subject !== undefined && subject.length > MAX_SUBJECT) throw badRequest('invalid subject');
  const body = params.string('body');
  if (body !== undefined && Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES) throw badRequest('invalid body');
  return {
    subject,
    body,
    bodyType: params.oneOf('body_type', BODY_TYPES),
    bccMe: params.boolean('bcc_me'),
    bccAll: params.boolean('bcc_all'),
  };
}

function applyEdits(draft: Draft, edits: DraftEdits): void {
  if (edits.subject !== undefined) draft.subject = edits.subject;
  if (edits.body !== undefined) draft.body = edits.body;
  if (edits.bodyType !== undefined) draft.bodyType = edits.bodyType;
  if (edits.bccMe !== undefined) draft.bccMe = edits.bccMe;
  if (edits.bccAll !== undefined) draft.bccAll = edits.bccAll;
  // Params sanitises a body only when the same call says body_type=html; the draft's own type decides.
  if (draft.bodyType === 'html' && (edits.body !== undefined || edits.bodyType !== undefined)) draft.body = sanitizeHtml(draft.body);
}

/** The caller's draft. Someone else's answers exactly like a missing one: drafts are private. */
function ownDraft(core: ServiceCore, params: Params, caller: Caller): Draft {
  const draft = core.store.drafts.get(params.requiredId('draft_id'));
  if (!draft || draft.userId !== caller.user.id) throw badRequest('invalid draft_id');
  return draft;
}

/**
 * The caller's draft, for a change: authorship gives nothing once the author may not post in the group
 * (banned, removed, the group locked), so the author's standing is checked as newdraft checks it.
 */
function editableDraft(core: ServiceCore, params: Params, caller: Caller): { draft: Draft; scope: GroupScope } {
  const draft = ownDraft(core, params, caller);
  const group = core.store.groups.get(draft.groupId);
  if (!group) throw badRequest('invalid draft_id');
  const scope = core.scopeOf(group, caller);
  core.require(scope, 'can_post');
  return { draft, scope };
}

function repliedMessage(core: ServiceCore, group: Group, messageId: string | undefined): Message {
  const message = messageId === undefined ? undefined : core.store.messages.get(messageId);
  if (!message || message.groupId !== group.id) throw badRequest('invalid message_id');
  return message;
}

function replySubject(subject: string): string {
  return /^re:/i.test(subject) ? subject : `Re: ${subject}`;
}

/** A path-free file name (clients may send one with directories) that is never empty. */
function baseName(filename: string): string {
  return filename.split(/[/\\]/).pop()?.trim() || 'attachment';
}

/** A media type safe to send back as a header; anything odd is served as opaque bytes. */
export function cleanMediaType(mediaType: string): string {
  return /^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w.+-]+=("[^"\r\n]*"|[\w.+-]+))*$/.test(mediaType)
    ? mediaType.toLowerCase()
    : 'application/octet-stream';
}

/** Refuses a call that would take the draft past either bound, before anything of it is stored. */
function checkTotals(draft: Draft, files: UploadedFile[]): void {
  if (draft.attachments.length + files.length > MAX_DRAFT_ATTACHMENTS) throw badRequest('too many attachments');
  const held = draft.attachments.reduce((sum, attachment) => sum + Buffer.byteLength(attachment.content, 'base64'), 0);
  const added = files.reduce((sum, file) => sum + file.data.length, 0);
  if (held + added > MAX_DRAFT_ATTACHMENT_BYTES) throw badRequest('attachments too large');
}

function attachFiles(draft: Draft, files: UploadedFile[]): void {
  checkTotals(draft, files);
  for (const file of files) {
    const attachment: Attachment = {
      id: String(draft.nextAttachmentId),
      filename: baseName(file.filename),
      mediaType: cleanMediaType(file.mediaType),
      content: file.data.toString('base64'),
    };
    draft.nextAttachmentId += 1;
    draft.attachments.push(attachment);
  }
}

/**
 * The hashtags a subject names, checked before anything is stored so a refused tag leaves no trace.
 * Unknown tags need `create_hashtags`; without it the post is refused rather than posted untagged.
 */
function checkHashtags(core: ServiceCore, scope: GroupScope, subject: string): string[] {
  const names = hashtagNames(subject);
  if (scope.perms.create_hashtags) return names;
  const known = new Set<string>();
  for (const tag of core.store.hashtags.values()) if (tag.groupId === scope.group.id) known.add(tag.name.toLowerCase());
  const unknown = names.find((name) => !known.has(name.toLowerCase()));
  if (unknown !== undefined) throw badRequest(`invalid hashtag ${unknown}`);
  return names;
}

/** What postdraft turns the draft into, all checked before the first write. */
interface Post {
  subject: string;
  replyTo?: Topic;
  tagNames: string[];
}

function checkPost(core: ServiceCore, scope: GroupScope, draft: Draft): Post {
  let replyTo: Topic | undefined;
  let subject = draft.subject.trim();
  if (draft.draftType === 'draft_type_reply') {
    // The replied message may have gone since newdraft.
    const message = repliedMessage(core, scope.group, draft.messageId);
    replyTo = core.store.topics.get(message.topicId);
    if (!replyTo) throw badRequest('invalid message_id');
    if (replyTo.isClosed) throw badRequest('topic closed');
    if (subject === '') subject = replySubject(message.subject);
  } else if (subject === '') throw badRequest('invalid subject');
  if (draft.body.trim() === '') throw badRequest('invalid body');
  return { subject, replyTo, tagNames: checkHashtags(core, scope, subject) };
}

function publish(core: ServiceCore, group: Group, caller: Caller, draft: Draft, post: Post): Message {
  const tagIds = hashtagIdsFor(core, group, post.tagNames);
  const fields = {
    subject: post.subject, body: draft.body, isPlainText: draft.bodyType === 'text', attachments: draft.attachments,
  };
  let message: Message;
  if (post.replyTo) {
    const topic = post.replyTo;
    // Tags are topic-wide: a reply's new tags join its topic. A fresh array, because earlier messages
    // share the topic's (posting.ts hands the same array to each message).
    const added = tagIds.filter((id) => !topic.hashtagIds.includes(id));
    if (added.length > 0) topic.hashtagIds = [...topic.hashtagIds, ...added];
    message = appendMessage(core, topic, caller.user, { ...fields, isReply: true });
    core.activity.record(group, 'message_posted', caller.user, `replied to "${topic.subject}"`);
  } else {
    ({ message } = startTopic(core, group, caller.user, { ...fields, hashtagIds: tagIds }));
    core.activity.record(group, 'topic_created', caller.user, `started the topic "${post.subject}"`);
  }
  core.store.removeDraft(draft);
  return message;
}

export const draftOperations: Operation[] = [
  defineOp('newdraft', 'POST', ({ core, params, caller }) => {
    const scope = seenGroupScope(core, params, caller);
    core.require(scope, 'can_post');
    const draftType = params.oneOf('draft_type', DRAFT_TYPES);
    if (!draftType) throw badRequest('invalid draft_type');
    let messageId: string | undefined;
    let subject = '';
    if (draftType === 'draft_type_reply') {
      // Any unusable message_id (missing, too long, unknown, another group's) is the same error.
      const message = repliedMessage(core, scope.group, params.string('message_id') || undefined);
      messageId = message.id;
      subject = replySubject(message.subject);
    }
    const edits = readEdits(params);
    let held = 0;
    for (const draft of core.store.drafts.values()) if (draft.userId === caller.user.id) held += 1;
    if (held >= MAX_DRAFTS_PER_USER) throw badRequest('too many drafts');
    const now = core.now();
    const draft = core.store.addDraft({
      groupId: scope.group.id, userId: caller.user.id, draftType, messageId, subject, body: '', bodyType: 'text',
      isSpecial: false, bccMe: false, bccAll: false, attachments: [], nextAttachmentId: 1, created: now, updated: now,
    });
    applyEdits(draft, edits);
    return core.present.draft(draft);
  }),

  defineOp('updatedraft', 'POST', ({ core, params, caller }) => {
    const { draft } = editableDraft(core, params, caller);
    applyEdits(draft, readEdits(params));
    draft.updated = core.now();
    core.store.touch();
    return core.present.draft(draft);
  }),

  defineOp('addattachments', 'POST', ({ core, params, caller, files }) => {
    const { draft } = editableDraft(core, params, caller);
    if (files.length === 0) throw badRequest('no attachments');
    attachFiles(draft, files);
    draft.updated = core.now();
    core.store.touch();
    return core.present.draft(draft);
  }),

  defineOp('postdraft', 'POST', ({ core, params, caller }) => {
    // Standing may have changed since newdraft (banned, left, group locked).
    const { draft, scope } = editableDraft(core, params, caller);
    const post = checkPost(core, scope, draft);
    return core.present.message(publish(core, scope.group, caller, draft, post));
  }),

  defineOp('getdrafts', 'GET', ({ core, params, caller }) => {
    // The group is optional here: drafts are the caller's own, so no permission is needed to list them.
    const named = params.has('group_id') || params.has('group_name');
    const groupId = named ? seenGroupScope(core, params, caller).group.id : undefined;
    const drafts = [...core.store.drafts.values()].filter(
      (draft) => draft.userId === caller.user.id && (groupId === undefined || draft.groupId === groupId),
    );
    const page = core.pager.page(drafts, params, DRAFT_SORT, `getdrafts ${caller.user.id} ${groupId ?? '*'}`);
    return listView(page, page.items.map((draft) => core.present.draft(draft)));
  }),

  defineOp('deletedraft', 'POST', ({ core, params, caller }) => {
    core.store.removeDraft(ownDraft(core, params, caller));
    return EMPTY_OK;
  }),
];
