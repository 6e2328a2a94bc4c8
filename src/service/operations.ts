import type { Operation } from './operation.js';
import { activityOperations } from './routes/activity.js';
import { archiveOperations } from './routes/archives.js';
import { chatOperations } from './routes/chats.js';
import { downloadOperations } from './routes/download.js';
import { draftOperations } from './routes/drafts.js';
import { groupOperations } from './routes/groups.js';
import { searchOperations } from './routes/search.js';
import { sessionOperations } from './routes/session.js';

/**
 * Every operation of the described interface (login is handled by the HTTP layer itself), and our
 * extensions (docs/protocol.md "Extensions"): `logout`, the group calls every public client makes
 * first (getsubs, getgroup, getmembers, searchmembers, getsubgroups, getdatabases) and getmessage.
 */
export const ALL_OPERATIONS: Operation[] = [
  ...activityOperations,
  ...archiveOperations,
  ...downloadOperations,
  ...searchOperations,
  ...chatOperations,
  ...draftOperations,
  ...sessionOperations,
  ...groupOperations,
];
