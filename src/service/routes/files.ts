import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Caller } from '../auth.js';
import type { ServiceCore } from '../core.js';
import { ApiError } from '../errors.js';
import { contentDisposition, sendError } from '../http-api.js';
import type { Attachment } from '../model.js';
import { seenScope } from '../visibility.js';

const MESSAGES_PREFIX = '/files/messages/';
const DRAFTS_PREFIX = '/files/drafts/';

/** An unknown file (a download link that went stale) is the error object with HTTP 400, as every failure (spec 4.1). */
const notFound = (what: string): ApiError => new ApiError('bad_request', `invalid ${what}`);

/** The ids a download URL names: its message or draft, and the attachment within it. */
interface FilePath {
  ownerId: string;
  attachmentId: string;
}

/**
 * Splits the raw path after the prefix. Route parameters are not used: opaque ids run to 255
 * characters (over find-my-way's default 100-character parameter limit once encoded), and may hold
 * `/`. Attachment ids and file names never hold a raw `/`, so the last two segments are those and
 * everything before them is the owner id, however it was encoded.
 */
function parseFilePath(rawUrl: string, prefix: string, owner: string): FilePath {
  const pathname = rawUrl.split('?', 1)[0]!;
  // indexOf rather than a fixed offset, so the routes also work registered under a plugin prefix.
  const path = pathname.slice(pathname.indexOf(prefix) + prefix.length);
  const segments = path.split('/');
  if (segments.length < 3) throw notFound(owner);
  try {
    const [attachmentId] = segments.slice(-2).map(decodeURIComponent);
    const ownerId = segments.slice(0, -2).map(decodeURIComponent).join('/');
    if (!ownerId || !attachmentId) throw notFound(owner);
    // The file name segment is only for the browser's "save as"; the ids find the file.
    return { ownerId, attachmentId };
  } catch (error) {
    if (error instanceof URIError) throw notFound(owner);
    throw error;
  }
}

function callerOf(core: ServiceCore, request: FastifyRequest): Caller {
  return core.auth.authenticate({ authorization: request.headers.authorization, cookieHeader: request.headers.cookie });
}

function findAttachment(attachments: Attachment[], id: string): Attachment {
  const attachment = attachments.find((a) => a.id === id);
  if (!attachment) throw notFound('attachment_id');
  return attachment;
}

/**
 * Uploaded content is served from the service's own origin, so it must not run there: images show
 * inline (they are the thumbnails too), anything else downloads, never sniffed, always sandboxed.
 */
function sendAttachment(reply: FastifyReply, attachment: Attachment) {
  const inline = attachment.mediaType.startsWith('image/') && attachment.mediaType !== 'image/svg+xml';
  reply.header('content-type', attachment.mediaType);
  reply.header('content-disposition', contentDisposition(attachment.filename, inline ? 'inline' : 'attachment'));
  reply.header('x-content-type-options', 'nosniff');
  reply.header('content-security-policy', 'sandbox');
  reply.header('cache-control', 'private, no-store');
  return reply.send(Buffer.from(attachment.content, 'base64'));
}

/**
 * The `download_url`s the Presenter builds for attachments. Same credentials as the API (cookie or
 * token); a message's files need `archives_visible` in its group, a draft's are its owner's only.
 */
export function mountFiles(app: FastifyInstance, core: ServiceCore, log: Logger): void {
  app.get(`${MESSAGES_PREFIX}*`, async (request, reply) => {
    try {
      const caller = callerOf(core, request);
      const { ownerId, attachmentId } = parseFilePath(request.url, MESSAGES_PREFIX, 'message_id');
      const message = core.store.messages.get(ownerId);
      if (!message) throw notFound('message_id');
      // A message of a group the caller may not see answers as an unknown one (visibility.ts).
      const scope = seenScope(core, core.store.groups.get(message.groupId), caller, () => notFound('message_id'));
      core.require(scope, 'archives_visible');
      return sendAttachment(reply, findAttachment(message.attachments, attachmentId));
    } catch (error) {
      return sendError(core, reply, error, log, 'files');
    }
  });

  app.get(`${DRAFTS_PREFIX}*`, async (request, reply) => {
    try {
      const caller = callerOf(core, request);
      const { ownerId, attachmentId } = parseFilePath(request.url, DRAFTS_PREFIX, 'draft_id');
      const draft = core.store.drafts.get(ownerId);
      // Someone else's draft answers like a missing one: drafts are private.
      if (!draft || draft.userId !== caller.user.id) throw notFound('draft_id');
      return sendAttachment(reply, findAttachment(draft.attachments, attachmentId));
    } catch (error) {
      return sendError(core, reply, error, log, 'files');
    }
  });
}
