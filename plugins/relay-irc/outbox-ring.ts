import type { ChannelOutbox } from './channel-outbox.js';

/**
 * The channels' outboxes, one per channel, which the pump of Outbound takes in turn: each search for
 * the next one to send from starts after the last one picked.
 */
export class OutboxRing {
  private turn = 0;

  constructor(readonly boxes: ChannelOutbox[]) {}

  find(channelKey: string): ChannelOutbox | undefined {
    return this.boxes.find((b) => b.channel.key === channelKey);
  }

  get(channelKey: string): ChannelOutbox {
    const box = this.find(channelKey);
    if (!box) throw new Error(`no IRC queue for ${channelKey}`);
    return box;
  }

  /** Whether the channel has a queue. */
  has(channelKey: string): boolean {
    return this.boxes.some((box) => box.channel.key === channelKey);
  }

  add(box: ChannelOutbox): void {
    this.boxes.push(box);
  }

  get queued(): number {
    return this.boxes.reduce((sum, box) => sum + box.queue.size, 0);
  }

  get inFlight(): number {
    return this.boxes.reduce((sum, box) => sum + box.flight.length, 0);
  }

  /** The next channel with something to send, taking channels in turn. */
  next(sendable: (box: ChannelOutbox) => boolean): ChannelOutbox | undefined {
    for (let i = 0; i < this.boxes.length; i += 1) {
      const box = this.boxes[(this.turn + i) % this.boxes.length]!;
      if (sendable(box)) {
        this.turn = (this.turn + i + 1) % this.boxes.length;
        return box;
      }
    }
    return undefined;
  }

  /** How long until a channel waiting after a refusal may send again (10 ms to 1 s). */
  retryWaitMs(): number {
    const now = Date.now();
    const waits = this.boxes.filter((box) => box.unsent > 0 && box.retryAt > now).map((box) => box.retryAt - now);
    return Math.max(10, Math.min(1000, ...waits));
  }
}
