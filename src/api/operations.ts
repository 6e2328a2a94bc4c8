/**
 * Every operation of the described interface with its method (spec part 4 and, for the draft
 * operations and search, docs/protocol.md). `login` is handled by the session.
 */
export const OPERATIONS = {
  getactivitylog: 'GET',
  gettopics: 'GET',
  gettopic: 'GET',
  getmessages: 'GET',
  downloadarchives: 'GET',
  searcharchives: 'GET',
  newchat: 'POST',
  updatechat: 'POST',
  getchats: 'GET',
  deletechat: 'POST',
  joinchat: 'POST',
  leavechat: 'POST',
  getchathistory: 'GET',
  newdraft: 'POST',
  updatedraft: 'POST',
  addattachments: 'POST',
  postdraft: 'POST',
  getdrafts: 'GET',
  deletedraft: 'POST',
} as const satisfies Record<string, 'GET' | 'POST'>;

export type OperationName = keyof typeof OPERATIONS;

/** The operations that answer a paged list. */
export const LIST_OPERATIONS = [
  'getactivitylog', 'gettopics', 'gettopic', 'getmessages', 'searcharchives', 'getchats', 'getchathistory', 'getdrafts',
] as const satisfies readonly OperationName[];

export function isOperation(name: string): name is OperationName {
  return Object.hasOwn(OPERATIONS, name);
}
