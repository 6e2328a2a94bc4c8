import type { Id } from '../api/types.js';

/** The chat a message belongs to, as the bot knows it. */
export interface ChatInfo {
  id: Id;
  subject: string;
  groupId: Id;
  groupName: string;
  chatsubId: Id;
}
