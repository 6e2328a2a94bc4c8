import type { MapRecord } from '../store/message-map.js';
import { nativeIn } from './map-keys.js';
import type { OutgoingMessage } from './message.js';

/**
 * What a relay is handed for a line going to channel `targetId`: the line as said, with this channel's
 * native ids of what it answers (`replyTo`, or `replyToKey` when the parent is queued there but not
 * posted yet) and of what an edit or deletion changes (`target`), and a quote of the parent for
 * platforms without threads (none when the line names its parent itself). `from`: when and where it was
 * handed on (a chat message, or the gateway's intake: OutgoingMessage.source).
 */
export function outgoingFor(
  record: MapRecord,
  targetId: string,
  gateway: string,
  from: { time: string; source: OutgoingMessage['source'] },
  related: { quoted: MapRecord | undefined; changed: MapRecord | undefined },
): OutgoingMessage {
  const out: OutgoingMessage = {
    key: JSON.stringify([record.key, targetId]), gateway, kind: record.kind as OutgoingMessage['kind'], text: record.text, speaker: record.speaker,
    origin: { endpoint: record.origin, platform: record.platform, nativeId: record.nativeId },
    time: from.time, source: from.source,
  };
  if (record.files) out.files = record.files;
  if (record.refusedFiles) out.refusedFiles = record.refusedFiles;
  const { quoted, changed } = related;
  if (quoted) {
    const at = nativeIn(quoted, targetId);
    if (at !== undefined) out.replyTo = at;
    // Not posted there yet (it may be ahead in the relay's queue): the relay asks again when sending.
    else out.replyToKey = JSON.stringify([quoted.key, targetId]);
    if (!record.namesParent) out.quote = { name: quoted.speaker.name, text: quoted.text };
  }
  const target = changed && nativeIn(changed, targetId);
  if (target !== undefined) out.target = target;
  return out;
}
