import { fileLines, type Attachment, type OutgoingMessage } from '../../src/index.js';
import type { DisplayOptions } from './options.js';
import type { OutboundItem } from './outbound.js';
import { renderComment, renderEdit, renderForSlack } from './render.js';

/** Slack shares at most this many files in one message (files.completeUploadExternal). */
export const FILES_PER_SHARE = 10;

/** What the relay does with a gateway line for one channel: queue this item, or drop it (and why). */
export type Plan = { item: OutboundItem } | { dropped: string };

/**
 * A gateway line (OutgoingMessage) as one item of the queue to Slack, without I/O:
 * - a message or an action: a new post (in the thread of `replyTo` when the core knows the parent's
 *   ts in this channel, else with `out.quote` above it); with files up to `maxFileSize` a file share
 *   (uploaded, the text with the speaker's name as its comment), larger files as their links;
 * - a join, leave or topic: dropped (a Slack channel shows its own members and topic);
 * - an edit of a post the relay made here (`target`): chat.update of it; of anything else (Slack lets
 *   an app change only its own posts): a follow-up post `(edit) text`;
 * - a deletion of a post the relay made here: chat.delete; of anything else: dropped (Slack cannot
 *   delete what the relay did not post, and a follow-up "deleted" line would only repeat it).
 */
export function planFor(channel: string, out: OutgoingMessage, display: DisplayOptions, queuedAt: number, maxFileSize = Number.POSITIVE_INFINITY): Plan {
  const common = { key: itemKey(channel, out.key), line: out.key, channel, chat: out.source.chat?.subject ?? '', queuedAt };
  if (out.kind === 'join' || out.kind === 'leave' || out.kind === 'topic') return { dropped: `a ${out.kind} (Slack shows its own)` };
  if (out.kind === 'delete') {
    if (!out.target) return { dropped: 'a deletion of a message the relay did not post in this channel' };
    return { item: { ...common, op: 'delete', ts: out.target, text: '' } };
  }
  if (out.kind === 'edit' && out.target) {
    return { item: { ...common, op: 'update', ts: out.target, text: renderEdit(out, display) } };
  }
  const native = out.kind === 'edit' ? [] : uploadable(out.files ?? [], maxFileSize);
  const links = fileLines((out.files ?? []).filter((file) => !native.includes(file)), out.refusedFiles);
  const item: OutboundItem = { ...common, op: 'post', ...renderForSlack(out, display, links) };
  if (native.length > 0) {
    item.files = native;
    item.comment = renderComment(out, display, links);
  }
  if (out.replyTo) item.thread_ts = out.replyTo;
  else if (out.replyToKey) {
    item.parent_key = out.replyToKey;
    const threaded = { ...out, replyTo: out.replyToKey };
    item.thread_text = renderForSlack(threaded, display, links).text;
    if (item.files) item.thread_comment = renderComment(threaded, display, links);
  }
  return { item };
}

/** The queue's key of a line in a channel: one chat message may go to two Slack channels. */
export function itemKey(channel: string, lineKey: string): string {
  return `${channel} ${lineKey}`;
}

/** The files that go up into Slack: those within the limit, as many as one share takes (the rest: links). */
function uploadable(files: readonly Attachment[], maxFileSize: number): Attachment[] {
  // An empty file cannot be uploaded (Slack asks for its length): its link instead.
  return files.filter((file) => file.size > 0 && file.size <= maxFileSize).slice(0, FILES_PER_SHARE);
}
