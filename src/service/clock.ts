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
  // As the real service writes them (field notes): nanoseconds and a numeric offset, here always UTC
  // (`2026-11-25T21:53:46.557000000+00:00`). Public clients read the offset from the last six characters.
  return new Date(ms).toISOString().replace(/Z$/, '000000+00:00');
}
