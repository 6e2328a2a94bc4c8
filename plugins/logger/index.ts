import { definePlugin } from '../../src/index.js';
import { TranscriptLogger } from './logger.js';
import { loggerOptions } from './options.js';

/**
 * Transcript logger: every chat message of the bot's chats, exactly once, into transcript files
 * (jsonl, text, html, markdown), one per group, chat and day. See docs/plugins/logger.md.
 */
export default definePlugin({
  name: 'logger',
  options: loggerOptions,
  // Each chat has transcript files of its own (unless `path` leaves the chat out): shards of a bot can log side by side.
  shardable: true,
  create(options, env) {
    return new TranscriptLogger(options, env);
  },
});

export { FORMATS, FORMAT_NAMES, type Format, type FormatName, type RenderOptions } from './formats.js';
export { PathPattern, safeSegment, DEFAULT_PATH } from './path-pattern.js';
export { loggerOptions, type LoggerOptions } from './options.js';
