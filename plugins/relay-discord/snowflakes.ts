/** Snowflakes compare as numbers (they may be longer than 2^53, so as strings of digits). */
export function compareIds(a: string, b: string): number {
  return a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
}

/** The newer of two snowflakes, either of which may be unknown. */
export function newerId(a: string | undefined, b: string | undefined): string | undefined {
  return a === undefined ? b : b === undefined ? a : compareIds(a, b) >= 0 ? a : b;
}
