import type { DurableQueue } from '../../src/index.js';

/** One post about to go out: its key (postKey) and when it was first tried (ms); a file share's try, its file ids. */
export interface PostAttempt {
  id: string;
  at: number;
  /** A file share (files.completeUploadExternal): the files it shares, by which it is found (shares carry no metadata). */
  files?: string[];
}

/** Marks kept before they are forgotten together: one append forgets them all. */
const FORGET_EVERY = 64;

/**
 * Which queued posts were already tried, kept on disk (`post-attempts.json`) next to the queue: a post
 * is marked (one journal append) before chat.postMessage goes out, so that after a crash, a timeout or
 * a dropped connection the relay knows it may be in Slack already and looks before posting again.
 * Only the queue's head is ever tried, so a mark whose item left the queue is merely stale; stale marks
 * are forgotten in bulk, keeping the cost per post one append.
 */
export class PostAttempts {
  constructor(private readonly journal: DurableQueue<PostAttempt>) {}

  /** When the post `id` was first tried, if it was. */
  at(id: string): number | undefined {
    return this.journal.all().find((attempt) => attempt.id === id)?.at;
  }

  /** Marks durably (before returning) that the post `id` goes out now; the first try's time is kept. */
  mark(id: string, at = Date.now()): void {
    if (this.at(id) === undefined) this.journal.push({ id, at });
  }

  /** Marks durably that the share `id` of these uploaded files goes out now (each try shares new uploads: all are kept). */
  markShare(id: string, files: string[], at = Date.now()): void {
    this.journal.push({ id, at: this.at(id) ?? at, files });
  }

  /** The files every try of the share `id` shared. */
  filesOf(id: string): string[] {
    return this.journal.all().flatMap((attempt) => (attempt.id === id ? attempt.files ?? [] : []));
  }

  /** The head of the queue is done with (posted, found or refused): now and then, forget every mark. */
  settled(): void {
    if (this.journal.size >= FORGET_EVERY) this.journal.shift(this.journal.size);
  }
}
