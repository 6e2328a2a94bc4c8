import type { Logger } from 'pino';
import {
  BadRequestError, failureFields, InadequatePermissionsError, InvalidValueError, QueueDrain, type DrainOutcome, type DurableQueue, type GroupPoster, type Id,
} from '../../src/index.js';

/** A gateway line waiting to be posted into a group. */
export interface GroupLine {
  key: string;
  /** The group's channel (its name). */
  channel: string;
  subject: string;
  body: string;
  /** The message (in this group) the line answers: it becomes a reply in that topic. */
  replyTo?: Id;
}

export interface OutboundCounters {
  posted_to_group: number;
  dropped: number;
  post_retries: number;
}

/**
 * Lines posted into groups, oldest first, one at a time, through GroupPoster (drafts, never twice for
 * one key): a line leaves the durable queue once posted, or once the service refused it for good
 * (no permission, a bad value: logged and counted, not retried forever). Anything else (the service
 * unreachable, 5xx, 429 past the client's own retries) is tried again with a growing pause (1 s to 60 s).
 */
export class GroupOutbound {
  private readonly drain: QueueDrain<GroupLine>;

  constructor(
    queue: DurableQueue<GroupLine>,
    private readonly deps: {
      poster: GroupPoster;
      /** The group's id once known (the follower learns it); undefined until then, and lines wait. */
      groupId: (channel: string) => Id | undefined;
      posted: (line: GroupLine, messageId: Id) => void;
      durable: () => Promise<void>;
      log: Logger;
      counters: OutboundCounters;
    },
  ) {
    this.drain = new QueueDrain(queue, {
      send: (line, signal) => this.send(line, signal),
      onRetry: () => {
        deps.counters.post_retries += 1;
      },
      retryMinMs: 1_000,
      retryMaxMs: 60_000,
      // A line waits until its group's id is known (nudge() when it is).
      ready: (line) => deps.groupId(line.channel) !== undefined,
    });
  }

  get size(): number {
    return this.drain.size;
  }

  push(line: GroupLine): void {
    this.drain.push(line);
  }

  /** Wakes the drain (a group's id became known). */
  nudge(): void {
    this.drain.wake();
  }

  start(): void {
    this.drain.start();
  }

  stop(): Promise<void> {
    return this.drain.stop();
  }

  private async send(line: GroupLine, signal: AbortSignal): Promise<DrainOutcome> {
    const groupId = this.deps.groupId(line.channel)!;
    try {
      // A worker that cannot prove the bot's lease posts nothing: durable() rejects, and the line is
      // tried again later (the worker stops the unit if the lease is lost for good).
      await this.deps.durable();
      const posted = await this.deps.poster.post({
        key: line.key, groupId, body: line.body, ...(line.replyTo ? { replyTo: line.replyTo } : { subject: line.subject }),
      });
      this.deps.counters.posted_to_group += 1;
      this.deps.posted(line, posted.messageId);
      return 'done';
    } catch (error) {
      if (signal.aborted) return 'stop';
      if (isRefusal(error)) {
        this.deps.counters.dropped += 1;
        this.deps.log.error({ key: line.key, group: line.channel, ...failureFields(error) }, 'the service refused a line posted into the group: it is dropped');
        // Its draft, if one was made, would be left over: deleted (the limit of drafts a user keeps is small).
        await this.deps.poster.abandon(line.key).catch((failure: unknown) => this.deps.log.warn({ key: line.key, ...failureFields(failure) }, 'could not delete the draft of a dropped line'));
        return 'done';
      }
      this.deps.log.warn({ key: line.key, group: line.channel, ...failureFields(error) }, 'could not post a line into the group; trying again');
      return 'retry';
    }
  }
}

/** Refusals that the same request would meet again. */
function isRefusal(error: unknown): boolean {
  return error instanceof InadequatePermissionsError || error instanceof InvalidValueError || error instanceof BadRequestError;
}
