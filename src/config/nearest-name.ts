/**
 * "Did you mean …?" for names a person typed: a plugin name, a config key, an `api` parameter.
 * One shared function so every place suggests the same way.
 */

/**
 * The candidate nearest to `input`, or undefined when none is near enough to be a plausible typo.
 *
 * Distance is Damerau-Levenshtein (optimal string alignment: insert, delete, substitute, swap two
 * neighbours), compared case-insensitively. A candidate is near enough when the distance is at most
 * half the longer name's length (at least 1), so `relay-ircc` → `relay-irc` and `chanels` → `chats`,
 * but `x` suggests nothing. A candidate that contains the input or is contained in it (3+ characters,
 * `name` → `group_name`) counts too, behind any closer typo. Ties go to the earlier candidate, so
 * callers control the order.
 */
export function nearestName(input: string, candidates: readonly string[]): string | undefined {
  const typed = input.toLowerCase();
  let best: { name: string; score: number } | undefined;
  for (const candidate of candidates) {
    const name = candidate.toLowerCase();
    if (name === typed) return candidate;
    const distance = editDistance(typed, name);
    const longer = Math.max(typed.length, name.length);
    let score = Number.POSITIVE_INFINITY;
    if (distance <= Math.max(1, Math.floor(longer / 2))) score = distance;
    else if (Math.min(typed.length, name.length) >= 3 && (name.includes(typed) || typed.includes(name))) {
      // Rank containment after every plausible typo: a typo is the likelier mistake.
      score = longer + distance;
    }
    if (score < (best?.score ?? Number.POSITIVE_INFINITY)) best = { name: candidate, score };
  }
  return best?.name;
}

/** Optimal string alignment distance: Levenshtein plus a swap of two neighbouring characters. */
export function editDistance(a: string, b: string): number {
  // rows[i][j] = distance between a[0..i) and b[0..j); only three rows are ever needed.
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, beforePrevious[j - 2]! + 1);
      }
      current.push(value);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}
