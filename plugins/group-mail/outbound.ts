import type { Logger } from 'pino';
import {
  Backoff, BadRequestError, failureFields, InadequatePermissionsError, InvalidValueError, sleep, type DurableQueue, type GroupPoster, type Id,
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
 * unreachable, 5xx, 429 past the client's own retries) is tried again with a growing pause.
 */
export class GroupOutbound {
  private wake: () => void = () => {};
  private running: Promise<void> | undefined;

  constructor(
    private readonly queue: DurableQueue<GroupLine>,
    private readonly deps: {
      poster: GroupPoster;
      /** The group's id once known (the follower learns it); undefined until then, and lines wait. */
      groupId: (channel: string) => Id | undefined;
      posted: (line: GroupLine, messageId: Id) => void;
      durable: () => Promise<void>;
      log: Logger;
      counters: OutboundCounters;
      stopping: AbortSignal;
    },
  ) {}

  get size(): number {
    return this.queue.size;
  }

  push(line: GroupLine): void {
    this.queue.push(line);
    this.wake();
  }

  /** Wakes the loop (a group's id became known). */
  nudge(): void {
    this.wake();
  }

  start(): void {
    this.running ??= this.run().catch((error: unknown) => {
      if (!this.deps.stopping.aborted) this.deps.log.error({ ...failureFields(error) }, 'posting into the group stopped');
    });
  }

  async stop(): Promise<void> {
    this.wake();
    await this.running;
  }

  private async run(): Promise<void> {
    const backoff = new Backoff(1_000, 60_000);
    const { stopping } = this.deps;
    while (!stopping.aborted) {
      const line = this.queue.peek();
      const groupId = line && this.deps.groupId(line.channel);
      if (!line || groupId === undefined) {
        // Woken after every poll: the stop listener goes with each wait, or one would gather per poll.
        await new Promise<void>((resolve) => {
          const done = () => {
            stopping.removeEventListener('abort', done);
            resolve();
          };
          this.wake = done;
          stopping.addEventListener('abort', done, { once: true });
        });
        continue;
      }
      try {
        // A worker that lost the bot's lease must post nothing: durable() rejects then, and the loop ends.
        await this.deps.durable();
        const posted = await this.deps.poster.post({
          key: line.key, groupId, body: line.body, ...(line.replyTo ? { replyTo: line.replyTo } : { subject: line.subject }),
        });
        this.deps.counters.posted_to_group += 1;
        this.deps.posted(line, posted.messageId);
        this.queue.shift();
        backoff.reset();
      } catch (error) {
        if (stopping.aborted) return;
        if (isRefusal(error)) {
          this.deps.counters.dropped += 1;
          this.deps.log.error({ key: line.key, group: line.channel, ...failureFields(error) }, 'the service refused a line posted into the group: it is dropped');
          // Its draft, if one was made, would be left over: deleted (the limit of drafts a user keeps is small).
          await this.deps.poster.abandon(line.key).catch((failure: unknown) => this.deps.log.warn({ key: line.key, ...failureFields(failure) }, 'could not delete the draft of a dropped line'));
          this.queue.shift();
          continue;
        }
        this.deps.counters.post_retries += 1;
        this.deps.log.warn({ key: line.key, group: line.channel, ...failureFields(error) }, 'could not post a line into the group; trying again');
        await sleep(backoff.next(), stopping).catch(() => undefined);
      }
    }
  }
}

/** Refusals that the same request would meet again. */
function isRefusal(error: unknown): boolean {
  return error instanceof InadequatePermissionsError || error instanceof InvalidValueError || error instanceof BadRequestError;
}
