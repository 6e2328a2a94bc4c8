import { channelLine, type ChannelEvent, type IrcChannelLine } from './incoming.js';

/** A batch of replayed history: a bouncer's playback (`znc.in/playback`), or a server's channel history (`chathistory`). */
const REPLAY_BATCH = /chathistory|playback/i;

/**
 * The replay batches being read. irc-framework hands a batch's lines between its `batch start` and
 * `batch end` events (all at once, when the batch closes): they are gathered here and handed on whole,
 * with the channel the batch is of, for the catch-up to read against the channel's position.
 */
export class ReplayBatches {
  private readonly open = new Map<string, { channel: string; lines: IrcChannelLine[] }>();

  start(event: { id: string; type?: string; params?: string[] }): void {
    const channel = event.params?.[0];
    if (REPLAY_BATCH.test(event.type ?? '') && channel) this.open.set(event.id, { channel, lines: [] });
  }

  /** A channel line: true when it belongs to a replay (gathered, or of a replay not read), false when it is live. */
  take(kind: IrcChannelLine['kind'], event: ChannelEvent): boolean {
    const replay = event.batch?.id !== undefined ? this.open.get(event.batch.id) : undefined;
    if (replay) replay.lines.push(channelLine(kind, event));
    return replay !== undefined || REPLAY_BATCH.test(event.batch?.type ?? '');
  }

  /** The batch closed: its channel and lines, oldest first, when it was a replay. */
  end(event: { id: string }): { channel: string; lines: IrcChannelLine[] } | undefined {
    const replay = this.open.get(event.id);
    this.open.delete(event.id);
    return replay;
  }

  /** The connection closed: its batches will not end. */
  clear(): void {
    this.open.clear();
  }
}
