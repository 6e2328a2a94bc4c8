import type { ChatMessage } from '../api/types.js';

/** What a chat's socket (ChatConnection) tells whoever reads it: its states and its events. */
export type ConnectionState = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed' | 'stopped';

/** A post the service refused on the socket: the error object's type and extra. */
export interface PostRefusal {
  type: string;
  extra: string;
}

export interface ChatConnectionEvents {
  state: (state: ConnectionState, previous: ConnectionState) => void;
  /**
   * The socket is open (fresh or again): whoever reads it must catch up on what was missed. With
   * `history` the service sends its 50 most recent messages first, which covers a short absence.
   */
  open: (history: boolean) => void;
  /** A chat message, and its frame's text; `fromHistory` when it came in the history sent on connect, not live. */
  message: (message: ChatMessage, fromHistory: boolean, wire: string) => void;
  /** The last frame of the history sent on connect has been emitted (after an `open` with history). */
  historyEnd: () => void;
  /**
   * The service refused a post sent on this socket (an error object as a frame: `rate_limit`, an
   * invalid message). Refusals come in the order of the posts.
   */
  postRefused: (refusal: PostRefusal) => void;
  /** The chat was deleted: the connection has stopped for good. */
  deleted: () => void;
}
