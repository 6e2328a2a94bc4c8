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

export type GetActivityLogParams = GroupRef & ListParams & ExtendedParam & {
  filter_by?: 'member' | 'message' | 'mod' | 'pay';
  restrict_date?: 'today' | 'last_week' | 'last_30_days' | 'before' | 'after' | 'between';
  start_date?: string;
  end_date?: string;
  action?: string;
  member_info_id?: Id;
  past_member_info_id?: Id;
};

export type GetTopicsParams = OptionalGroupRef & ListParams & ExtendedParam;
export type GetTopicParams = { topic_id: Id } & ListParams & ExtendedParam;
export type GetMessagesParams = GroupRef & ListParams & ExtendedParam;

export type SearchArchivesParams = GroupRef & ListParams & ExtendedParam & {
  q?: string;
  collapse_topics?: boolean;
  exclude_sigs?: boolean;
  start_date?: string;
  end_date?: string;
  preset_date_range?: 'past_hour' | 'past_24_hours' | 'past_week' | 'past_month' | 'past_year';
};

export type DownloadArchivesParams = GroupRef & {
  start_msg_num?: number;
  /** `YYYY-MM-DDThh:mm:ssZ`; a Date is formatted so. */
  start_time?: string | Date;
  /** Ours (docs/protocol.md "Archive download"): messages created at or before this time; a Date is formatted as start_time. */
  end_time?: string | Date;
};

export type NewChatParams = GroupRef & ExtendedParam & { subject: string; desc: string };
export type UpdateChatParams = ExtendedParam & { chat_id: Id; subject?: string; desc?: string; is_closed?: boolean };
export type GetChatsParams = GroupRef & ListParams & ExtendedParam & { show_closed?: boolean };
export type ChatIdParams = ExtendedParam & { chat_id: Id };
export type LeaveChatParams = ExtendedParam & { chatsub_id: Id };
export type GetChatHistoryParams = { chat_id: Id; start_msg_num?: number } & ListParams & ExtendedParam;

export type DraftFields = { subject?: string; body?: string; body_type?: 'text' | 'html'; bcc_me?: boolean; bcc_all?: boolean };
export type NewDraftParams = GroupRef & ExtendedParam & DraftFields & (
  { draft_type: 'draft_type_post'; message_id?: never } | { draft_type: 'draft_type_reply'; message_id: Id }
);
export type UpdateDraftParams = ExtendedParam & DraftFields & { draft_id: Id };
export type DraftIdParams = ExtendedParam & { draft_id: Id };
export type GetDraftsParams = OptionalGroupRef & ListParams & ExtendedParam;

export interface AttachmentInput {
  filename: string;
  content: Buffer | Uint8Array | string;
  mediaType?: string;
}

/** Our extensions (docs/protocol.md "Extensions"). */
export type GetSubsParams = ListParams & ExtendedParam;
export type GetGroupParams = GroupRef & ExtendedParam;
export type GetMessageParams = ExtendedParam & ({ message_id: Id } | (GroupRef & { msg_num: number }));
export type GroupListParams = GroupRef & ListParams & ExtendedParam;
/** `type`: `members`, `mods`, `banned` (for those who may ban), `pending`, `bouncing`. */
export type GetMembersParams = GroupListParams & { type?: string };
export type SearchMembersParams = GetMembersParams & { q: string };
