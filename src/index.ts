/**
 * groupwire's public API: what plugins and users' scripts import. Nothing else under src/ is a
 * promise to them.
 *
 * - The client of the Group Discussion Service: {@link GroupsClient} (every operation typed, paging,
 *   retries, the chat socket) and its errors under {@link GroupsError}.
 * - Plugins: {@link definePlugin}, the {@link PluginContext} each message comes with, the
 *   {@link PluginEnv} a plugin is made with, and {@link PlatformEndpoint}, the interface a relay gives
 *   the gateways for its platform.
 * - The stores a plugin keeps its state in: {@link KeyValueStore}, {@link DurableQueue} (drained by
 *   {@link QueueDrain}), {@link MsgNumMarks}, {@link RecentIdsFile}.
 * - The local service, for tests and demos: {@link LocalService}.
 *
 * What counts as the public API, and what a change to it means for the version: CHANGELOG.md.
 *
 * @module groupwire
 */
export * from './api/index.js';
export { LocalService, type ConnectionLimits, type LocalServiceOptions } from './service/local-service.js';
export type { RateLimitConfig } from './service/rate-limit.js';
export type { IdStyle } from './service/ids.js';
export {
  definePlugin, type PluginDefinition, type PluginInstance, type PluginContext, type PluginEnv, type ChatInfo, type BotInfo,
  type ChatTarget, type Next, type ChatReset, type PluginStatus, type SideBacklog, type ReplyOptions, type GatewayPort, type PlatformEndpoint, type PlatformSpec, type PluginWarning,
} from './pipeline/plugin.js';
export type {
  Direction, EventKind, GatewayOrigin, IncomingMessage, OutgoingMessage, OwnPost, RelayedLine, Speaker,
} from './gateway/message.js';
export type { KeyValueStore } from './store/kv-store.js';
export { MAX_POST_LENGTH, PostFailedError } from './supervisor/chat-outbox.js';
export { receiveUntilTaken } from './supervisor/receive-until-taken.js';
export { RecentIds } from './store/recent-ids.js';
export { RecentIdsFile } from './store/recent-ids-file.js';
export { DurableQueue, QueueFullError, type QueueOptions, type QueueBacklog } from './store/durable-queue.js';
export { HashSlots } from './store/hash-slots.js';
export { QueueDrain, type DrainOutcome, type QueueDrainOptions } from './gateway/queue-drain.js';
export { htmlToText, htmlToLine, withoutTags } from './api/html-text.js';
export { visibleControls, visibleLines } from './api/visible-text.js';
export { chatSafeText } from './text/chat-safe-text.js';
export { closeBidi } from './text/bidi.js';
export { attributedLines, oneLineName, splitLines } from './text/attributed-lines.js';
export { markdownLines, stripControls, type MarkdownLines, type MarkdownQuote } from './text/markdown-lines.js';
export type { Attachment, FileBytes, IncomingFile, MediaFiles, RefusedFile } from './media/attachment.js';
export { fileLines, sizeInWords } from './media/file-lines.js';
export { FileRefusedError } from './media/file-refused.js';
export { contentDisposition } from './media/content-disposition.js';
export {
  acceptMultipart, isMultipart, multipartParts, MultipartError, type MultipartField, type MultipartFile, type MultipartLimits, type MultipartPart,
  type MultipartProblem,
} from './media/multipart-parts.js';
export { Backoff, sleep } from './chat/backoff.js';
export { failureFields, reasonOf, type ErrorClass } from './api/failure-fields.js';
export { MsgNumMarks } from './store/msg-num-marks.js';
export { FILE_STORAGE, LeaseLostError, type Journal, type Storage } from './store/storage.js';
export {
  appendFilePrivateSync, mkdirPrivate, mkdirPrivateSync, openPrivate, openPrivateSync, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE,
  writeFilePrivate, writeFilePrivateSync,
} from './store/private-files.js';
export { RedisStorage, type Fence, type RedisStorageOptions } from './store/redis-storage.js';
export { GroupPoster, type GroupPostRequest, type GroupPosted } from './mail/group-post.js';
