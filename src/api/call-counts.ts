import { GroupsError } from './errors.js';

/**
 * REST calls by operation and answer (`ok`, or the error object's type: `rate_limit`, `transport`, ...):
 * each attempt counts, retries too, so a service that answers 429 shows it. Bounded: operations are
 * the described ones, and an answer type that is not a plain word counts as `other`.
 */
export class CallCounts {
  private readonly counts = new Map<string, Map<string, number>>();

  /** Counts one attempt of an operation with its answer (the client does it for every call). */
  note(operation: string, answer: string): void {
    let byAnswer = this.counts.get(operation);
    if (!byAnswer) this.counts.set(operation, (byAnswer = new Map()));
    byAnswer.set(answer, (byAnswer.get(answer) ?? 0) + 1);
  }

  /** Counts a failed attempt under its error's type (`failed` for an error that is not the service's). */
  noteFailure(operation: string, error: unknown): void {
    this.note(operation, answerTypeOf(error));
  }

  /** Every count so far, by operation and answer: what groupwire_rest_calls_total exports. */
  *entries(): Generator<{ operation: string; answer: string; count: number }> {
    for (const [operation, byAnswer] of this.counts) {
      for (const [answer, count] of byAnswer) yield { operation, answer, count };
    }
  }
}

function answerTypeOf(error: unknown): string {
  if (error instanceof GroupsError) return /^[a-z_]{1,40}$/.test(error.type) ? error.type : 'other';
  return 'failed';
}
