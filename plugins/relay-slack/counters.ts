/** The relay's counters, as stats() reports them (with `queued` and `disabled` added there). */
export interface Counters {
  /** Gateway lines posted to Slack (new posts, follow-up `(edit)` lines included). */
  relayed_out: number;
  /** Posts whose answer was lost (a crash or a timeout during chat.postMessage) found in Slack, not posted again (counted in relayed_out too). */
  recovered: number;
  /** Files of gateway lines uploaded into Slack (files.completeUploadExternal); larger ones go as links. */
  files_out: number;
  /** Edits applied to the relay's own Slack posts (chat.update). */
  edited_out: number;
  /** The relay's Slack posts deleted (chat.delete). */
  deleted_out: number;
  /** Gateway lines Slack cannot show: deletions of messages the relay never posted in that channel. */
  dropped: number;
  /** Slack messages, edits and deletions the gateways took (env.gateway.receive). */
  relayed_in: number;
  /** Attempts made again after a failure or a rate limit (either direction). */
  retries: number;
  /** 429s / `ratelimited` answers from Slack. */
  rate_limited: number;
  /** Slack events not relayed on purpose: own and bots' posts, edits, joins, other channels, duplicates. */
  ignored: number;
  /** Messages that could not be relayed, each logged as an error (refused by Slack, queue full, chat gone). */
  failed: number;
  /** Gateway lines passed by while the relay is stopped (invalid token). */
  skipped: number;
  /** Socket Mode connections opened again after the first. */
  reconnects: number;
  /** Messages read back from channel history (conversations.history / .replies) after the relay was away; duplicates of events included. */
  caught_up: number;
  /** conversations.history / .replies calls made to catch up. */
  catch_up_requests: number;
}

export function counters(): Counters {
  return { relayed_out: 0, recovered: 0, files_out: 0, edited_out: 0, deleted_out: 0, dropped: 0, relayed_in: 0, retries: 0, rate_limited: 0, ignored: 0, failed: 0, skipped: 0, reconnects: 0, caught_up: 0, catch_up_requests: 0 };
}
