import type { ChatMessage } from '../api/types.js';

/** The history a socket sends on connect: a first start wanting at most this many recent messages needs no REST call. */
export const SOCKET_HISTORY = 50;

/** Where a first start begins: a cursor and the messages to hand on first, or a REST read (the frames cannot say). */
export type FirstStartPlan = { cursor: number; handOn: ChatMessage[] } | { readHistory: true };

/**
 * A first start's position from the history the socket sent on connect (the chat's 50 most recent
 * messages, msg_nums without gaps): its newest msg_num (0 for an empty chat), the same place a REST
 * read of the history would give; with `wanted` (history_on_first_start), that many of them are handed
 * on first. Frames missing (fewer than wanted or than the chat holds, or with a gap): the REST read says
 * what the chat holds.
 */
export function planFirstStart(history: readonly ChatMessage[], wanted: number): FirstStartPlan {
  const sorted = history.toSorted((a, b) => a.msg_num - b.msg_num);
  const newest = sorted.at(-1)?.msg_num ?? 0;
  if (wanted === 0) return { cursor: newest, handOn: [] };
  const recent = sorted.slice(-wanted);
  const whole = recent.length > 0 && recent.at(-1)!.msg_num - recent[0]!.msg_num === recent.length - 1;
  if (recent.length < Math.min(wanted, newest) || (newest > 0 && !whole)) return { readHistory: true };
  return { cursor: (recent[0]?.msg_num ?? newest + 1) - 1, handOn: recent };
}

/**
 * A first start's history frames, gathered until the history sent on connect is all in (its end told,
 * or a frame past the socket's 50), then given to whoever waits on begin()'s promise.
 */
export class FirstStartFrames {
  private frames: ChatMessage[] | undefined;
  private done: ((frames: ChatMessage[] | undefined) => void) | undefined;
  /** Past the socket's 50 frames, until the history's end is told: every frame is live. */
  past = false;

  /** A first start's socket opened: resolves with its history frames, or undefined when superseded. */
  begin(): Promise<ChatMessage[] | undefined> {
    this.abandon();
    this.frames = [];
    return new Promise((done) => {
      this.done = done;
    });
  }

  get gathering(): boolean {
    return this.frames !== undefined;
  }

  /** A history frame: kept (true) while within the socket's 50; past them (false) the history was all in, and the frame is live. */
  take(message: ChatMessage): boolean {
    if (this.frames!.length < SOCKET_HISTORY) {
      this.frames!.push(message);
      return true;
    }
    this.finish();
    this.past = true;
    return false;
  }

  /** The history is all in: the frames go to the waiting first start. */
  finish(): void {
    this.release(this.frames ?? []);
  }

  /** A new socket (its history says it again), or a stop: the waiting first start gets nothing. */
  abandon(): void {
    this.release(undefined);
    this.past = false;
  }

  /** A stop within the history's round trip: the history still places the chat if it ends within `ms`. */
  abandonAfter(ms: number): void {
    const waiting = this.done;
    if (!waiting) return;
    setTimeout(() => {
      if (this.done === waiting) this.abandon();
    }, ms).unref();
  }

  private release(frames: ChatMessage[] | undefined): void {
    const done = this.done;
    this.frames = undefined;
    this.done = undefined;
    done?.(frames);
  }
}
