/**
 * Every operation of the described interface with its method (spec part 4 and, for the draft
 * operations and search, docs/protocol.md), and our extensions (docs/protocol.md): `logout`
 * ("Authentication"; a real service may not have it) and the calls public clients make first
 * ("Extensions": getsubs, getgroup, getmessage, getmembers, searchmembers, getsubgroups, getdatabases). `login` is
 * handled by the session.
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
  logout: 'POST',
  getsubs: 'GET',
  getgroup: 'GET',
  getmessage: 'GET',
  getmembers: 'GET',
  getsubgroups: 'GET',
  getdatabases: 'GET',
  searchmembers: 'GET',
} as const satisfies Record<string, 'GET' | 'POST'>;

/** The name of an operation of the service (`getchats`, `postdraft`, ...): a key of OPERATIONS. */
export type OperationName = keyof typeof OPERATIONS;

/** The operations that answer a paged list. */
export const LIST_OPERATIONS = [
  'getactivitylog', 'gettopics', 'gettopic', 'getmessages', 'searcharchives', 'getchats', 'getchathistory', 'getdrafts',
  'getsubs', 'getmembers', 'getsubgroups', 'getdatabases', 'searchmembers',
] as const satisfies readonly OperationName[];

/** Whether a name is an operation the client knows (GroupsClient.call refuses the others before calling). */
export function isOperation(name: string): name is OperationName {
  return Object.hasOwn(OPERATIONS, name);
}

const GROUP = ['group_id', 'group_name'] as const;
const PAGING = ['limit', 'page_token', 'sort_field', 'sort_dir'] as const;
const DRAFT_FIELDS = ['subject', 'body', 'body_type', 'bcc_me', 'bcc_all'] as const;

/**
 * The parameters each operation takes besides `extended` and `csrf` (spec part 4, docs/protocol.md for
 * drafts and search), so a misspelt name is caught before it is sent: the service ignores unknown
 * parameters (spec part 9) and would answer about the one it then misses.
 */
export const OPERATION_PARAMS: Record<OperationName, readonly string[]> = {
  getactivitylog: [
    ...GROUP, ...PAGING, 'filter_by', 'restrict_date', 'start_date', 'end_date', 'action', 'member_info_id', 'past_member_info_id',
  ],
  gettopics: [...GROUP, ...PAGING],
  gettopic: ['topic_id', ...PAGING],
  getmessages: [...GROUP, ...PAGING],
  downloadarchives: [...GROUP, 'start_msg_num', 'start_time', 'end_time'],
  searcharchives: [...GROUP, ...PAGING, 'q', 'collapse_topics', 'exclude_sigs', 'start_date', 'end_date', 'preset_date_range'],
  newchat: [...GROUP, 'subject', 'desc'],
  updatechat: ['chat_id', 'subject', 'desc', 'is_closed'],
  getchats: [...GROUP, ...PAGING, 'show_closed'],
  deletechat: ['chat_id'],
  joinchat: ['chat_id'],
  leavechat: ['chatsub_id'],
  getchathistory: ['chat_id', 'start_msg_num', ...PAGING],
  newdraft: [...GROUP, 'draft_type', 'message_id', ...DRAFT_FIELDS],
  updatedraft: ['draft_id', ...DRAFT_FIELDS],
  addattachments: ['draft_id'],
  postdraft: ['draft_id'],
  getdrafts: [...GROUP, ...PAGING],
  deletedraft: ['draft_id'],
  logout: [],
  getsubs: [...PAGING],
  getgroup: [...GROUP],
  getmessage: [...GROUP, 'message_id', 'msg_num'],
  getmembers: [...GROUP, ...PAGING, 'type'],
  getsubgroups: [...GROUP, ...PAGING],
  getdatabases: [...GROUP, ...PAGING],
  searchmembers: [...GROUP, ...PAGING, 'q', 'type'],
};
