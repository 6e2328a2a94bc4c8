import { CLOSE } from '../api/close-codes.js';

export { CLOSE };

/** What each close code of the chat socket asks of a client. */
export type CloseAction =
  | { kind: 'rejoin'; why: string }
  | { kind: 'closed'; why: string }
  | { kind: 'deleted'; why: string }
  | { kind: 'login'; why: string }
  | { kind: 'wait'; why: string }
  | { kind: 'forbidden'; why: string }
  | { kind: 'backoff'; why: string };

/** Every close code mapped: resume after a wait, rejoin, wait for reopening, or give the chat up. */
export function closeAction(code: number): CloseAction {
  switch (code) {
    case CLOSE.chatClosed:
      return { kind: 'closed', why: 'the chat was closed' };
    case CLOSE.chatDeleted:
      return { kind: 'deleted', why: 'the chat was deleted' };
    case CLOSE.chatSubRemoved:
      return { kind: 'rejoin', why: 'the chat_sub was removed' };
    case CLOSE.notMember:
      return { kind: 'forbidden', why: 'no longer a member of the group' };
    case CLOSE.sessionEnded:
      return { kind: 'login', why: 'the session ended (logged out)' };
    default:
      // 1000/1001/1006/1012, slow consumer, anything unknown: the service or the network; come back.
      return { kind: 'backoff', why: `closed with ${code}` };
  }
}
