import type { z } from 'zod';
import { nearestName } from './nearest-name.js';

type Path = Array<string | number>;

/** One mistake zod found, sorted by what a person reading bots.yaml needs to hear. */
export type SchemaProblem =
  /** A key the map does not allow (`inSchema`: the map's path inside the schema validated, for its allowed keys). */
  | { kind: 'unknown'; path: Path; inSchema: Path; key: string }
  /** A required key left out; `expected` in words when zod says it, else the schema's own message. */
  | { kind: 'missing'; path: Path; key: string; expected?: string; message: string }
  | { kind: 'other'; path: Path; message: string };

type Issue = z.core.$ZodIssue;

/**
 * zod's issues for `value` (found at `basePath` in the file) as problems. A union of maps that none of
 * its forms takes (a login of `{ email, passwrd }`) is said in the words of the form whose keys the map
 * fits best, when that form's only quarrel is about keys: its unknown key gets a "did you mean",
 * rather than the union's one-line "expected { email, password } or { token }".
 */
export function schemaProblems(issues: readonly Issue[], value: unknown, basePath: Path, within: Path = []): SchemaProblem[] {
  return issues.flatMap((issue) => {
    // A union's own issues are relative to the union: `within` is where it stands in the value.
    const inSchema = [...within, ...issue.path.filter((key): key is string | number => typeof key !== 'symbol')];
    const path = [...basePath, ...inSchema];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key): SchemaProblem => ({ kind: 'unknown', path, inSchema, key }));
    }
    if (issue.code === 'invalid_union') {
      const form = closestForm(issue.errors, valueAt(value, inSchema));
      if (form) return schemaProblems(form, value, basePath, inSchema);
    }
    const key = inSchema.at(-1);
    // A key that is not there at all: "missing key", where its map is (zod says "expected array, received
    // undefined", or a union's "Invalid input").
    if (typeof key === 'string' && (issue.code === 'invalid_type' || issue.code === 'invalid_union') && isMissing(value, inSchema)) {
      const expected = issue.code === 'invalid_type' ? issue.expected : undefined;
      return [{ kind: 'missing', path, key, ...(expected ? { expected } : {}), message: issue.message }];
    }
    return [{ kind: 'other', path, message: issue.message }];
  });
}

/**
 * The issues of the one form of a union a map was meant as, or none (the union's own message stands).
 * A form is a candidate when the map has a key it does not allow, and the map shares a key with it or
 * a key it does not allow is a near-miss of one it lacks (`tokn` for `token`); a key another form
 * takes rules it out (`{ email, token }` mixes two forms: no "did you mean" can fix that). Of the
 * candidates, the fewest unknown keys, then the fewest other mistakes; a tie is none.
 */
function closestForm(forms: ReadonlyArray<readonly Issue[]>, input: unknown): readonly Issue[] | undefined {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return undefined;
  const keys = Object.keys(input);
  const read = forms.map((issues) => {
    const unknown = issues.flatMap((issue) => (issue.code === 'unrecognized_keys' && issue.path.length === 0 ? issue.keys : []));
    const missing = issues.flatMap((issue) => {
      const key = issue.path[0];
      return issue.path.length === 1 && typeof key === 'string' && !keys.includes(key) ? [key] : [];
    });
    return { issues, unknown, missing, known: keys.filter((key) => !unknown.includes(key)), other: issues.length - (unknown.length > 0 ? 1 : 0) };
  });
  const candidates = read.filter((form) => form.unknown.length > 0
    && (form.known.length > 0 || form.unknown.some((key) => nearestName(key, form.missing) !== undefined))
    && !form.unknown.some((key) => read.some((other) => other !== form && other.known.includes(key))))
    .sort((a, b) => a.unknown.length - b.unknown.length || a.other - b.other);
  const [best, next] = candidates;
  if (!best || (next && next.unknown.length === best.unknown.length && next.other === best.other)) return undefined;
  return best.issues;
}

function valueAt(value: unknown, path: Path): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

/** Whether the last key of `path` is absent from a map that is there. */
function isMissing(value: unknown, path: Path): boolean {
  const parent = valueAt(value, path.slice(0, -1));
  return typeof parent === 'object' && parent !== null && !Array.isArray(parent) && !Object.hasOwn(parent, path.at(-1)!);
}
