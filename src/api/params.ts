import type { GroupRef, Id, OptionalGroupRef } from './types.js';

/** Paging and sorting (spec 4.0). `limit` is 1 to 100. (Types, not interfaces, so they fit the wire's index signature.) */
export type ListParams = {
  limit?: number;
  page_token?: Id;
  sort_field?: string;
  sort_dir?: 'asc' | 'desc';
};

/** `extended: true` turns a result into `[result, user]` (spec 2.3a). */
export type ExtendedParam = {
  extended?: boolean;
};

/** getactivitylog (spec 4.1): a group's activity log, filtered by kind and date. */
export type GetActivityLogParams = GroupRef & ListParams & ExtendedParam & {
  filter_by?: 'member' | 'message' | 'mod' | 'pay';
  restrict_date?: 'today' | 'last_week' | 'last_30_days' | 'before' | 'after' | 'between';
  start_date?: string;
  end_date?: string;
  action?: string;
  member_info_id?: Id;
  past_member_info_id?: Id;
};

/** gettopics (spec 4.2): the topics of one group, or of every group of the caller's without one. */
export type GetTopicsParams = OptionalGroupRef & ListParams & ExtendedParam;
/** gettopic (spec 4.2): the messages of one topic. */
export type GetTopicParams = { topic_id: Id } & ListParams & ExtendedParam;
/** getmessages (spec 4.2): a group's messages, newest first unless sorted otherwise. */
export type GetMessagesParams = GroupRef & ListParams & ExtendedParam;

/** searcharchives (spec 4.2): a full-text search of a group's messages (docs/protocol.md "Search"). */
export type SearchArchivesParams = GroupRef & ListParams & ExtendedParam & {
  q?: string;
  collapse_topics?: boolean;
  exclude_sigs?: boolean;
  start_date?: string;
  end_date?: string;
  preset_date_range?: 'past_hour' | 'past_24_hours' | 'past_week' | 'past_month' | 'past_year';
};

/** downloadarchives (spec 4.2): which of a group's messages the mbox in the zip holds. */
export type DownloadArchivesParams = GroupRef & {
  start_msg_num?: number;
  /** `YYYY-MM-DDThh:mm:ssZ`; a Date is formatted so. */
  start_time?: string | Date;
  /** Ours (docs/protocol.md "Archive download"): messages created at or before this time; a Date is formatted as start_time. */
  end_time?: string | Date;
};

/** newchat (spec 4.3): a chat's subject and its description (HTML). */
export type NewChatParams = GroupRef & ExtendedParam & { subject: string; desc: string };
/** updatechat (spec 4.3): what changes of a chat the caller owns; closing it is `is_closed: true`. */
export type UpdateChatParams = ExtendedParam & { chat_id: Id; subject?: string; desc?: string; is_closed?: boolean };
/** getchats (spec 4.3): a group's open chats, or its closed ones with `show_closed`. */
export type GetChatsParams = GroupRef & ListParams & ExtendedParam & { show_closed?: boolean };
/** The calls naming one chat (joinchat, deletechat): its id. */
export type ChatIdParams = ExtendedParam & { chat_id: Id };
/** leavechat (spec 4.3): the caller's chat_sub to end (not the chat's id). */
export type LeaveChatParams = ExtendedParam & { chatsub_id: Id };
/** getchathistory (spec 4.3): a chat's messages, from `start_msg_num` on (docs/protocol.md "History that goes backwards"). */
export type GetChatHistoryParams = { chat_id: Id; start_msg_num?: number } & ListParams & ExtendedParam;

/** What a draft holds besides its type: subject, body (text or HTML) and the copies to send. */
export type DraftFields = { subject?: string; body?: string; body_type?: 'text' | 'html'; bcc_me?: boolean; bcc_all?: boolean };
/** newdraft (spec 4.4): a new post, or a reply to `message_id`. */
export type NewDraftParams = GroupRef & ExtendedParam & DraftFields & (
  { draft_type: 'draft_type_post'; message_id?: never } | { draft_type: 'draft_type_reply'; message_id: Id }
);
/** updatedraft: saves changed fields of a draft (docs/protocol.md "Drafts"). */
export type UpdateDraftParams = ExtendedParam & DraftFields & { draft_id: Id };
/** The calls naming one draft (postdraft, deletedraft): its id. */
export type DraftIdParams = ExtendedParam & { draft_id: Id };
/** getdrafts: the caller's drafts, in one group or all (docs/protocol.md "Drafts"). */
export type GetDraftsParams = OptionalGroupRef & ListParams & ExtendedParam;

/** A file to attach to a draft (addattachments): its name, its bytes (a string is sent as UTF-8) and its media type (application/octet-stream when left out). */
export interface AttachmentInput {
  filename: string;
  content: Buffer | Uint8Array | string;
  mediaType?: string;
}

/** Our extensions (docs/protocol.md "Extensions"). */
export type GetSubsParams = ListParams & ExtendedParam;
/** getgroup: one group the caller can see. */
export type GetGroupParams = GroupRef & ExtendedParam;
/** getmessage: one message, by its id or by its number in a group. */
export type GetMessageParams = ExtendedParam & ({ message_id: Id } | (GroupRef & { msg_num: number }));
/** The paged lists of a group's things (getsubgroups, getdatabases): the group and the paging. */
export type GroupListParams = GroupRef & ListParams & ExtendedParam;
/** `type`: `members`, `mods`, `banned` (for those who may ban), `pending`, `bouncing`. */
export type GetMembersParams = GroupListParams & { type?: string };
/** searchmembers: the members whose name or address matches `q`. */
export type SearchMembersParams = GetMembersParams & { q: string };
