import type { Clock } from './clock.js';
import { ApiError, rateLimited, type ErrorType } from './errors.js';

export type FaultScope = 'api' | 'upgrade' | 'all';

interface ErrorFault {
  remaining: number;
  type: Extract<ErrorType, 'rate_limit' | 'server'>;
  status: number;
  retryAfter: number;
  scope: FaultScope;
  /** Only calls of these operations (none: every call in scope). */
  operations: string[];
}

/**
 * Faults injected through the admin API, consulted on every API call and websocket upgrade. The
 * counters say how many were actually applied, for the chaos suite's report.
 */
export class Faults {
  private errorFaults: ErrorFault[] = [];
  private refuseUpgradesUntil = 0;
  private refuseStatus = 503;
  latencyMs = 0;
  private latencyUntil = Infinity;
  /** Operations whose next answers are lost (the work done, the connection cut instead of answering). */
  private lostAnswers: Array<{ remaining: number; operations: string[] }> = [];
  readonly applied = { errors: 0, refusedUpgrades: 0, delayed: 0, lost_answers: 0 };

  constructor(private readonly clock: Clock) {}

  answerErrors(fault: Omit<ErrorFault, 'remaining'> & { count: number }): void {
    this.errorFaults.push({ ...fault, remaining: fault.count });
  }

  loseAnswers(count: number, operations: string[]): void {
    this.lostAnswers.push({ remaining: count, operations });
  }

  /**
   * Whether this call's answer is to be lost (counted as applied). Asked after the operation ran, so
   * its change is stored: a network cut after the server did the work, which callers must survive.
   */
  loseAnswer(operation: string): boolean {
    const fault = this.lostAnswers.find((f) => f.remaining > 0 && (f.operations.length === 0 || f.operations.includes(operation)));
    if (!fault) return false;
    fault.remaining -= 1;
    this.lostAnswers = this.lostAnswers.filter((f) => f.remaining > 0);
    this.applied.lost_answers += 1;
    return true;
  }

  refuseUpgrades(seconds: number, status = 503): void {
    this.refuseUpgradesUntil = this.clock.now() + seconds * 1000;
    this.refuseStatus = status;
  }

  setLatency(ms: number, seconds?: number): void {
    this.latencyMs = ms;
    this.latencyUntil = seconds === undefined ? Infinity : this.clock.now() + seconds * 1000;
  }

  clear(): void {
    this.errorFaults = [];
    this.lostAnswers = [];
    this.refuseUpgradesUntil = 0;
    this.latencyMs = 0;
  }

  /** The delay to add to this request, if latency is injected. */
  delay(): number {
    if (this.latencyMs <= 0) return 0;
    if (this.clock.now() > this.latencyUntil) {
      this.latencyMs = 0;
      return 0;
    }
    this.applied.delayed += 1;
    return this.latencyMs;
  }

  /** The injected error this call must answer with, if any. */
  errorFor(kind: 'api' | 'upgrade', operation: string): ApiError | undefined {
    if (kind === 'upgrade' && this.clock.now() < this.refuseUpgradesUntil) {
      this.applied.refusedUpgrades += 1;
      const seconds = Math.ceil((this.refuseUpgradesUntil - this.clock.now()) / 1000);
      return new ApiError('server', 'upgrades refused (injected fault)', {
        status: this.refuseStatus,
        headers: { 'retry-after': String(Math.max(1, seconds)) },
      });
    }
    const fault = this.errorFaults.find(
      (f) => f.remaining > 0 && (f.scope === 'all' || f.scope === kind) &&
        (f.operations.length === 0 || f.operations.includes(operation)),
    );
    if (!fault) return undefined;
    fault.remaining -= 1;
    this.errorFaults = this.errorFaults.filter((f) => f.remaining > 0);
    this.applied.errors += 1;
    if (fault.type === 'rate_limit') {
      const error = rateLimited(fault.retryAfter, 'too many requests (injected fault)');
      return fault.status === 429 ? error : new ApiError('rate_limit', error.extra, { status: fault.status, headers: error.headers });
    }
    return new ApiError('server', 'server problem (injected fault); try again later', { status: fault.status });
  }
}
