import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { ChannelLog, LogEntry } from './stream-log.js';

/** Lines written to one client at a time before looking at its socket again. */
const BATCH = 500;

export interface StreamCounters {
  stream_connects: number;
  stream_resets: number;
}

/** One line as a server-sent event: `id:` is the line's number in its channel, the data the line's JSON (one line: JSON escapes newlines). */
export function eventOf(entry: LogEntry): string {
  return `id: ${entry.seq}\nevent: message\ndata: ${JSON.stringify(entry.line)}\n\n`;
}

/**
 * The event streams (`GET /gateways/<channel>/events`). Each client reads the channel's durable log
 * (stream-log.ts) from its own position: two clients both get every line, and one that comes back
 * with `Last-Event-ID` gets exactly what it missed. A client is written to only while its socket
 * takes more; a slow one falls behind and catches up from the log (or, if what it missed is no longer
 * kept, gets `event: reset` and the oldest kept onwards), so it never holds lines in memory.
 */
export class EventStreams {
  private readonly closers = new Set<() => void>();

  constructor(private readonly options: { keepaliveMs: number; log: Logger; counters: StreamCounters }) {}

  get clients(): number {
    return this.closers.size;
  }

  /** Streams `log` to `response` from after `position` (undefined: the lines sent from now on). */
  serve(channel: string, log: ChannelLog, response: ServerResponse, position: number | undefined): void {
    const { counters } = this.options;
    counters.stream_connects += 1;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // A stream's connection is never reused: closed with it, a stop does not wait for the client to let it go.
      connection: 'close',
      // nginx and the like would otherwise buffer the stream.
      'x-accel-buffering': 'no',
    });
    // A first comment at once: the client knows it is subscribed (and proxies pass the headers on).
    response.write(':connected\n\n');
    let at = position ?? log.last;
    let blocked = false;
    const pump = () => {
      if (blocked || response.destroyed) return;
      for (;;) {
        const page = log.after(at, BATCH);
        if (page.reset) {
          counters.stream_resets += 1;
          response.write(`event: reset\ndata: ${JSON.stringify({ oldest: log.oldest, last: log.last })}\n\n`);
          at = log.oldest - 1;
          continue;
        }
        if (page.entries.length === 0) return;
        let room = true;
        for (const entry of page.entries) {
          room = response.write(eventOf(entry));
          at = entry.seq;
        }
        if (!room) {
          blocked = true;
          response.once('drain', () => {
            blocked = false;
            pump();
          });
          return;
        }
      }
    };
    const keepalive = setInterval(() => response.write(':keepalive\n\n'), this.options.keepaliveMs);
    const unlisten = log.listen(pump);
    const close = () => {
      clearInterval(keepalive);
      unlisten();
      this.closers.delete(close);
      if (!response.writableEnded) response.end();
    };
    this.closers.add(close);
    response.on('close', close);
    response.on('error', (error) => this.options.log.debug({ channel, err: error }, 'an event stream client went away'));
    pump();
  }

  /** Ends every stream (the plugin stops: clients reconnect with Last-Event-ID and lose nothing). */
  closeAll(): void {
    for (const close of [...this.closers]) close();
  }
}
