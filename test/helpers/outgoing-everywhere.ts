import type { OutgoingMessage } from '../../src/gateway/message.js';

/** A gateway line whose every text field (text, names, subject, quote, file) is `text`: for the linear-time tests. */
export function outgoing(text: string, kind: OutgoingMessage['kind'] = 'message'): OutgoingMessage {
  return {
    key: 'k', gateway: 'g', kind, text, speaker: { platform: 'chat', id: text, name: text }, time: '2024-01-01T00:00:00Z',
    origin: { endpoint: 'e', platform: 'chat', nativeId: '1' },
    source: { chat: { id: 1, subject: text }, message: { msg_num: 1, display_name: text, user_name: text, profile_photo_url: text } },
    quote: { name: text, text }, files: [{ name: text, url: text }],
  } as unknown as OutgoingMessage;
}
