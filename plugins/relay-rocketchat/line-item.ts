import { fileLines, type OutgoingMessage } from '../../src/index.js';
import type { LineParts, OutboundItem } from './outbound.js';

/**
 * A gateway line as the queue to Rocket.Chat keeps it (rendered when sent: the bot's permissions, read
 * at start, decide how); undefined when there is nothing to send (a kind Rocket.Chat has no use for; an
 * edit or deletion without its target: only the relay's own messages can be changed). A post keeps its
 * files (uploaded when sent); files the gateway refused are said after its text, as text.
 */
export function itemOf(channel: string, message: OutgoingMessage): OutboundItem | undefined {
  if (message.kind !== 'message' && message.kind !== 'action' && message.kind !== 'edit' && message.kind !== 'delete') return undefined;
  if ((message.kind === 'edit' || message.kind === 'delete') && !message.target) return undefined;
  if (message.kind === 'delete') return { key: message.key, channel, kind: 'delete', target: message.target! };
  const { name, id, platform } = message.speaker;
  const line: LineParts = { speaker: { name, id, platform }, text: message.text, action: message.kind === 'action' };
  if (message.kind === 'edit') return { key: message.key, channel, kind: 'edit', target: message.target!, line };
  if (!message.replyTo && message.quote) line.quote = message.quote;
  const refused = fileLines(undefined, message.refusedFiles);
  if (refused.length > 0) line.text = [line.text, ...refused].filter(Boolean).join('\n');
  return {
    key: message.key, channel, kind: 'post', line,
    ...(message.files?.length ? { files: message.files } : {}),
    ...(message.replyTo ? { target: message.replyTo } : {}),
    ...(message.replyToKey && !message.replyTo ? { parentKey: message.replyToKey } : {}),
  };
}
