import type { Operation } from './operation.js';
import { activityOperations } from './routes/activity.js';
import { archiveOperations } from './routes/archives.js';
import { chatOperations } from './routes/chats.js';
import { downloadOperations } from './routes/download.js';
import { draftOperations } from './routes/drafts.js';
import { searchOperations } from './routes/search.js';
import { sessionOperations } from './routes/session.js';

/**
 * Every operation of the described interface (login is handled by the HTTP layer itself), and our
 * extension `logout` (docs/protocol.md).
 */
export const ALL_OPERATIONS: Operation[] = [
  ...activityOperations,
  ...archiveOperations,
  ...downloadOperations,
  ...searchOperations,
  ...chatOperations,
  ...draftOperations,
  ...sessionOperations,
];
