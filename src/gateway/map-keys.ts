import type { ChatMessage } from '../api/types.js';
import type { MapRecord } from '../store/message-map.js';

// How a line is named in the message map: its record key, its native id on an endpoint, a chat message's id.

/** The map's record key of a line's key as sent to a relay (`[record key, target]`); answers at origin have none. */
export function recordKeyOf(key: string): string | undefined {
  try {
    const [recordKey] = JSON.parse(key) as unknown[];
    return typeof recordKey === 'string' && recordKey !== 'answer' ? recordKey : undefined;
  } catch {
    return undefined;
  }
}

/** The native id of a line on an endpoint: where it was said, or its copy there. */
export function nativeIn(record: MapRecord, endpointId: string): string | undefined {
  return record.origin === endpointId ? record.nativeId : record.copies[endpointId]?.id;
}

/**
 * A chat message's id in the message map: its id and when it was made. A service started again from
 * its seed hands out the same ids for new messages; the time tells them from the lines the map knows.
 */
export function chatNativeId(message: ChatMessage): string {
  return `${message.id}/${message.created}`;
}
