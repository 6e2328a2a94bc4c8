import type { OutgoingMessage } from '../../src/index.js';
import type { DisplayOptions } from './options.js';
import type { OutboundItem } from './outbound.js';
import { renderEdit, renderForSlack } from './render.js';

/** What the relay does with a gateway line for one channel: queue this item, or drop it (and why). */
export type Plan = { item: OutboundItem } | { dropped: string };

/**
 * A gateway line (OutgoingMessage) as one item of the queue to Slack, without I/O:
 * - a message or an action: a new post (in the thread of `replyTo` when the core knows the parent's
 *   ts in this channel, else with `out.quote` above it);
 * - a join, leave or topic: dropped (a Slack channel shows its own members and topic);
 * - an edit of a post the relay made here (`target`): chat.update of it; of anything else (Slack lets
 *   an app change only its own posts): a follow-up post `(edit) text`;
 * - a deletion of a post the relay made here: chat.delete; of anything else: dropped (Slack cannot
 *   delete what the relay did not post, and a follow-up "deleted" line would only repeat it).
 */
export function planFor(channel: string, out: OutgoingMessage, display: DisplayOptions, queuedAt: number): Plan {
  const common = { key: itemKey(channel, out.key), line: out.key, channel, chat: out.source.chat?.subject ?? '', queuedAt };
  if (out.kind === 'join' || out.kind === 'leave' || out.kind === 'topic') return { dropped: `a ${out.kind} (Slack shows its own)` };
  if (out.kind === 'delete') {
    if (!out.target) return { dropped: 'a deletion of a message the relay did not post in this channel' };
    return { item: { ...common, op: 'delete', ts: out.target, text: '' } };
  }
  if (out.kind === 'edit' && out.target) {
    return { item: { ...common, op: 'update', ts: out.target, text: renderEdit(out, display) } };
  }
  const item: OutboundItem = { ...common, op: 'post', ...renderForSlack(out, display) };
  if (out.replyTo) item.thread_ts = out.replyTo;
  else if (out.replyToKey) {
    item.parent_key = out.replyToKey;
    item.thread_text = renderForSlack({ ...out, replyTo: out.replyToKey }, display).text;
  }
  return { item };
}

/** The queue's key of a line in a channel: one chat message may go to two Slack channels. */
export function itemKey(channel: string, lineKey: string): string {
  return `${channel} ${lineKey}`;
}
