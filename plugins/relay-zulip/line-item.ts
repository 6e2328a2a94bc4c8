import { fileLines, type OutgoingMessage } from '../../src/index.js';
import type { OutboundItem } from './outbound.js';
import { renderLine } from './render.js';

/**
 * A gateway line as the queue to Zulip keeps it, its text rendered now (`format`, escaped); undefined
 * when there is nothing to send (a kind Zulip has no use for; an edit or deletion without its target:
 * only the relay's own messages can be changed). A post keeps its files (uploaded when sent) and the
 * lines of files the gateway refused.
 */
export function itemOf(channel: string, message: OutgoingMessage, format: string): OutboundItem | undefined {
  if (message.kind !== 'message' && message.kind !== 'action' && message.kind !== 'edit' && message.kind !== 'delete') return undefined;
  if ((message.kind === 'edit' || message.kind === 'delete') && !message.target) return undefined;
  if (message.kind === 'delete') return { key: message.key, channel, kind: 'delete', target: message.target! };
  const line = { template: format, name: message.speaker.name, text: message.text, action: message.kind === 'action' };
  if (message.kind === 'edit') return { key: message.key, channel, kind: 'edit', target: message.target!, content: renderLine(line) };
  const content = renderLine({ ...line, ...(message.quote ? { quote: message.quote } : {}) });
  const answers = message.replyTo !== undefined || message.replyToKey !== undefined;
  const refused = fileLines(undefined, message.refusedFiles);
  return {
    key: message.key, channel, kind: 'post', content,
    ...(message.files?.length ? { files: message.files } : {}),
    ...(refused.length > 0 ? { refusedLines: refused } : {}),
    ...(message.replyTo ? { target: message.replyTo } : {}),
    ...(message.replyToKey && !message.replyTo ? { parentKey: message.replyToKey } : {}),
    ...(answers && message.quote ? { replyContent: renderLine(line) } : {}),
  };
}
