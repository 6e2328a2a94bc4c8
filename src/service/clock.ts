/** The service's notion of now. Tests advance it (the 24-hour archive rule, session expiry). */
export class Clock {
  private offsetMs = 0;

  now(): number {
    return Date.now() + this.offsetMs;
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }

  get offset(): number {
    return this.offsetMs;
  }

  set offset(ms: number) {
    this.offsetMs = ms;
  }
}

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
