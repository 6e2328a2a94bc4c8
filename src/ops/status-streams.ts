import type { ServerResponse } from 'node:http';
import type { StatusSnapshot } from './status-snapshot.js';

/** How many /status/events streams may be open at once; one more is answered 503 (docs/operations.md). */
export const MAX_STATUS_STREAMS = 16;
/** What a refused stream is told to wait, in seconds (`Retry-After`). */
export const STREAM_RETRY_AFTER_SECONDS = 10;
/** A stream with more than this waiting in its buffer is skipped until it drains. */
const MAX_BUFFERED_BYTES = 64 * 1024;
/** A stream whose buffer has not drained for this long is closed: its client is gone or stuck, and it holds a place. */
const STALLED_AFTER_MS = 60_000;

interface Stream {
  response: ServerResponse;
  /** The snapshot's content (clock and process figures aside) as this stream last got it; undefined: send it whole. */
  lastContent: string | undefined;
  /** Since when write() said the buffer is full; undefined while it takes more. */
  fullSince: number | undefined;
}

/**
 * The open /status/events streams and what each was last sent. A stream gets the whole snapshot
 * (`status`) when it opens, after a push it missed, and when something other than the clock and the
 * process figures changed since its last one; otherwise a small `tick` (`now`, `uptimeSeconds`,
 * `process`). A stream whose buffer is full (its client does not read) is skipped until it drains, so
 * a client that never reads costs at most one frame, not a frame a second for ever.
 */
export class StatusStreams {
  private readonly streams = new Map<ServerResponse, Stream>();

  constructor(private readonly max = MAX_STATUS_STREAMS, private readonly stalledAfterMs = STALLED_AFTER_MS) {}

  get size(): number {
    return this.streams.size;
  }

  get full(): boolean {
    return this.streams.size >= this.max;
  }

  /** The bytes queued for the streams, not yet taken by the kernel (what a slow client costs this process). */
  bufferedBytes(): number {
    let bytes = 0;
    for (const response of this.streams.keys()) bytes += response.writableLength;
    return bytes;
  }

  add(response: ServerResponse): void {
    const stream: Stream = { response, lastContent: undefined, fullSince: undefined };
    this.streams.set(response, stream);
    response.on('close', () => this.streams.delete(response));
    response.on('drain', () => {
      stream.fullSince = undefined;
    });
  }

  /** Sends the snapshot to every stream (or to `only`), whole or as a tick, skipping any whose buffer is full. */
  push(snapshot: StatusSnapshot, only?: ServerResponse): void {
    const content = contentOf(snapshot);
    let whole: string | undefined;
    let tick: string | undefined;
    const now = Date.now();
    for (const stream of only ? [this.streams.get(only)].filter((s) => s !== undefined) : this.streams.values()) {
      const { response } = stream;
      if (stream.fullSince !== undefined || response.writableLength > MAX_BUFFERED_BYTES) {
        stream.fullSince ??= now;
        // Missed this one: the next push it takes is the whole snapshot.
        stream.lastContent = undefined;
        if (now - stream.fullSince > this.stalledAfterMs) response.destroy();
        continue;
      }
      let frame: string;
      if (stream.lastContent === content) {
        tick ??= `event: tick\ndata: ${JSON.stringify({ now: snapshot.now, uptimeSeconds: snapshot.uptimeSeconds, process: snapshot.process })}\n\n`;
        frame = tick;
      } else {
        whole ??= `event: status\ndata: ${JSON.stringify(snapshot)}\n\n`;
        frame = whole;
        stream.lastContent = content;
      }
      if (!response.write(frame)) stream.fullSince = now;
    }
  }

  endAll(): void {
    for (const response of this.streams.keys()) response.end();
    this.streams.clear();
  }
}

/**
 * The snapshot without what changes every second by itself (the clock, the uptime, the process's
 * memory and lag, and each chat's seconds since its last message, which the page works out from
 * `lastMessageAt` and `now`): when this is unchanged, a tick says all there is to say.
 */
function contentOf(snapshot: StatusSnapshot): string {
  const { now: _now, uptimeSeconds: _uptime, process: _process, bots, gateways, ...rest } = snapshot;
  return JSON.stringify({
    ...rest,
    bots: bots.map((bot) => ({
      ...bot, chats: bot.chats.map(({ secondsSinceLastMessage: _seconds, ...chat }) => chat),
      plugins: bot.plugins.map((plugin) => (plugin.sides ? { ...plugin, sides: plugin.sides.map(({ lastLineSeconds: _seconds, ...side }) => side) } : plugin)),
    })),
    // The sides' ages are worked out by the page from lastLineAt and now; the history changes at each sample.
    gateways: (gateways ?? []).map((gateway) => ({ ...gateway, sides: gateway.sides.map(({ lastLineSeconds: _seconds, ...side }) => side) })),
  });
}
