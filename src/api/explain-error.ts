import {
  ArchiveDownloadLimitError, GroupsError, ResponseFormatError, TransportError, UnauthorizedError, type CallContext,
} from './errors.js';

type ExplainParams = Readonly<Record<string, unknown>>;

/**
 * An error of the service as a sentence a person understands, with the raw type and extra kept after
 * it for searching and bug reports:
 *
 *   group "demo" was not found (bad_request: invalid group_name)
 *   only moderators can read the activity log (inadequate_permissions: view_activity)
 *
 * `context` is what the caller knows of the refused call (else what was attached to the error with
 * withContext()): its parameters let the sentence name what was not found. The sentence starts in
 * lower case so callers can put it after a prefix ("groupwire: ", "!close failed: "). Errors that are
 * not the service's answer (a network failure, a bug) come back as their message.
 */
export function explainError(error: unknown, context?: CallContext): string {
  if (error instanceof ArchiveDownloadLimitError) {
    // The extra repeats the time; the raw part keeps only the type so the time is said once.
    return `the archive may be downloaded once per 24 hours; the next download is allowed at ${error.nextAllowedAt.toISOString()} (${error.type})`;
  }
  if (error instanceof TransportError || error instanceof ResponseFormatError) return error.message;
  if (!(error instanceof GroupsError)) return error instanceof Error ? error.message : String(error);
  const raw = error.extra ? `${error.type}: ${error.extra}` : error.type;
  const sentence = sentenceFor(error, context ?? error.context ?? {});
  return sentence ? `${sentence} (${raw})` : `the service refused the request (${raw})`;
}

function sentenceFor(error: GroupsError, context: CallContext): string | undefined {
  const { params } = context;
  switch (error.type) {
    case 'bad_request':
      return badRequest(error.extra, params);
    case 'group_not_found':
      return groupNotFound(params);
    case 'invalid_value':
      return invalidValue(error.extra, params);
    case 'inadequate_permissions':
      return permission(error.extra, error.operation);
    case 'unauthorized_error':
    case 'unauthorized':
      if (error instanceof UnauthorizedError && error.twoFactorRequired) return 'this account needs a two-factor code';
      if (error.extra === 'invalid twofactor') return 'the two-factor code was not accepted';
      return 'the e-mail address or password is wrong';
    case 'authentication':
      return 'the service did not accept the login (an unknown token, or the session has ended)';
    case 'expired':
      return 'the login has expired; log in again';
    case 'rate_limit':
      return error.retryAfterSeconds === undefined
        ? 'too many requests; wait a little and try again'
        : `too many requests; try again in ${Math.ceil(error.retryAfterSeconds)} s`;
    case 'server':
      return 'the service had a problem; try again later';
    case 'bad_csrf':
      return 'the service refused the csrf token; log in again';
    default:
      return undefined;
  }
}

/** `"demo"` for a text (cut short), `42` for an id, undefined when the parameter was not given. */
function shown(params: ExplainParams | undefined, name: string): string | undefined {
  const value = params?.[name];
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value);
  if (/^\d+$/.test(text)) return text;
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}

function groupNotFound(params: ExplainParams | undefined): string {
  const group = shown(params, 'group_name') ?? shown(params, 'group_id');
  if (group) return `group ${group} was not found`;
  return params ? 'which group? give group_name or group_id' : 'the group was not found';
}

// What an unknown id names, for `invalid chat_id` and its kind.
const NOT_FOUND: Record<string, (id: string) => string> = {
  chat_id: (id) => `the chat ${id} was not found`,
  chatsub_id: (id) => `the chat subscription ${id} was not found (or is not yours)`,
  topic_id: (id) => `the topic ${id} was not found`,
  draft_id: (id) => `the draft ${id} was not found (or is not yours)`,
  message_id: (id) => `the message ${id} was not found in this group`,
  msg_num: (num) => `message #${num} was not found in this group`,
  member_info_id: (id) => `the member ${id} was not found in this group`,
  past_member_info_id: (id) => `the past member ${id} was not found in this group`,
};

function badRequest(extra: string, params: ExplainParams | undefined): string | undefined {
  if (extra === 'invalid group_name' || extra === 'invalid group_id') return groupNotFound(params);
  if (extra === 'closed chat') return 'the chat is closed';
  if (extra === 'already subscribed') return 'you are already in this chat';
  if (extra === 'invalid start_time format') return 'start_time must be a time such as 2024-05-01T10:00:00Z';
  if (/^-#tag/.test(extra)) return 'excluding a hashtag (-#tag) is not supported yet';
  if (extra.startsWith('give one of')) return extra.replace(/^give one of/, 'give only one of');
  const name = /^invalid (\w+)$/.exec(extra)?.[1];
  if (!name) return undefined;
  const value = shown(params, name);
  const notFound = NOT_FOUND[name];
  if (value) return notFound ? notFound(value) : `${name} ${value} is not accepted`;
  // Without the call's parameters we cannot tell a missing value from a wrong one.
  if (!params) return notFound ? notFound('').replace('  ', ' ') : `${name} is missing or not accepted`;
  return `${name} is required`;
}

function invalidValue(field: string, params: ExplainParams | undefined): string {
  if (field === 'limit') return 'limit must be a whole number from 1 to 100';
  if (field === 'page_token') return 'the page token is no longer valid (it expired or belongs to another query): start again without page_token';
  if (field === 'sort_dir') return 'sort_dir must be asc or desc';
  if (field === 'message') return 'a chat line may not be blank or longer than the service takes';
  if (field === 'sort_field') return `this list cannot be sorted by ${shown(params, 'sort_field') ?? 'that field'}`;
  const value = shown(params, field);
  return value ? `${field} ${value} is not a valid value` : `the value of ${field || 'a parameter'} is not valid`;
}

// The permission flags of spec 2.4 as what they allow, for "only moderators can ..." sentences.
const PERMISSIONS: Record<string, string> = {
  view_activity: 'only moderators can read the activity log',
  manage_chats: 'only moderators can create chats in this group',
  view_chats: 'you may not see the chats of this group',
  chat_visible: 'you may not see the chats of this group',
  archives_visible: 'you may not read the archives of this group',
  view_archives: 'you may not read the archives of this group',
  download_archives: 'you may not download the archive of this group',
  can_post: 'you may not post in this group',
  'chat owner': 'only the chat\'s owner can change or delete it',
  'chat_sub owner': 'that chat subscription is someone else\'s',
};

function permission(flag: string, operation: string): string {
  if (flag === 'subscribed to the group') {
    // Posting into a chat one is already in: the membership went away, most often by a ban.
    return operation === 'chatdata' || operation === 'chat_post'
      ? 'you are banned from this group (or no longer a member), so you cannot post here'
      : 'you are not a member of this group (or are banned from it)';
  }
  return PERMISSIONS[flag] ?? `you lack the ${flag || 'needed'} permission in this group`;
}
