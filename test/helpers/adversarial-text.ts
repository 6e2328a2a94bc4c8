import { performance } from 'node:perf_hooks';
import { expect } from 'vitest';

/**
 * Issue #31, the class of "one input stalls everyone": every regular expression and text transform that
 * sees text a user sent must run in linear time. These are the inputs that make a backtracking or
 * rescanning transform quadratic (or worse), each 1 MiB, and the bound each transform is held to.
 *
 * Why a time bound in a test (the house rule is benchmarks, not timed assertions): the issue asks for it,
 * and the bound sits where no quadratic version can be. A linear pass over 1 MiB takes milliseconds to a
 * few hundred on a busy 2-core machine; a quadratic one makes about 10^12 steps over 1 MiB (minutes to
 * hours), a cubic one never ends. A bound of seconds cannot flake on a slow machine and cannot be met by
 * a quadratic transform.
 */

export const ADVERSARIAL_BYTES = 1024 * 1024;

/** Generous for a linear pass over 1 MiB on a loaded machine; hopeless for a quadratic one. */
export const LINEAR_BOUND_MS = 4_000;

/** `unit` repeated to `bytes` UTF-16 units (ASCII units, so the same number of UTF-8 bytes). */
export function repeatTo(unit: string, bytes = ADVERSARIAL_BYTES): string {
  return unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
}

/**
 * The adversarial shapes, by name. Each is 1 MiB. Add a shape when a transform has a weakness none of
 * these reach (say in a comment which transform it is for).
 */
export function adversarialTexts(bytes = ADVERSARIAL_BYTES): Record<string, string> {
  return {
    'many <': repeatTo('<', bytes),
    'many <a': repeatTo('<a', bytes),
    'many <a and spaces': repeatTo('<a ', bytes),
    'many </': repeatTo('</', bytes),
    'many <!--': repeatTo('<!--', bytes),
    'many &#': repeatTo('&#', bytes),
    'many &': repeatTo('&a', bytes),
    'deep nesting': repeatTo('<b>', bytes),
    'deep blockquotes': repeatTo('<blockquote>', bytes),
    'spaces then x': `${repeatTo(' ', bytes - 1)}x`,
    'tabs and spaces then x': `${repeatTo(' \t', bytes - 1)}x`,
    'spaces, no newline': repeatTo(' ', bytes),
    'newlines': repeatTo('\n', bytes),
    'spaces and newlines': repeatTo(' \n', bytes),
    'many >': repeatTo('> ', bytes),
    'markup stars': repeatTo('*', bytes),
    'markup underscores': repeatTo('_a', bytes),
    'markup backticks': repeatTo('`', bytes),
    'markup tildes': repeatTo('~', bytes),
    'link brackets': repeatTo('[a](', bytes),
    'slack links': repeatTo('<@', bytes),
    'mentions': repeatTo('@', bytes),
    'colons': repeatTo(':a', bytes),
    'urls': repeatTo('http://', bytes),
    'irc formatting codes': repeatTo('\x03' + '1,', bytes),
    'control characters': repeatTo('\x1b[', bytes),
    'bidi controls': repeatTo('\u202e', bytes),
    'word characters': repeatTo('a', bytes),
    // For search phrase matching (src/service/search-query.ts): one word over and over, which every
    // position of a phrase starting with it matches for as long as the phrase.
    'repeated words': repeatTo('a ', bytes),
    // group-mail's snippetOf: quotes within quotes, each closed (removing the innermost again and again was quadratic).
    'nested closed blockquotes': `${'<blockquote>'.repeat(Math.floor(bytes / 25))}${'</blockquote>'.repeat(Math.floor(bytes / 25))}`,
    // group-mail's snippetOf: many "… wrote:" lines (each looked for the next line with text in a copy of all the rest).
    'wrote lines': repeatTo('a wrote:\n', bytes),
  };
}

/** Milliseconds `run` takes once (after one small warm-up call, so compiling is not counted). */
export function timeOnce(run: () => unknown): number {
  const started = performance.now();
  run();
  return performance.now() - started;
}

/**
 * Fails unless `transform` takes less than LINEAR_BOUND_MS on every adversarial shape (or on those
 * named in `only`). The failure names the shape and the time.
 */
export function expectLinearOnAdversarialText(transform: (text: string) => unknown, only?: readonly string[]): void {
  transform('warm up <a> & &#65; *x* `y`');
  const shapes = adversarialTexts();
  const names = only ?? Object.keys(shapes);
  for (const name of names) {
    const text = shapes[name];
    if (text === undefined) throw new Error(`no adversarial shape named ${name}`);
    const ms = timeOnce(() => transform(text));
    expect(ms, `${name}: ${Math.round(ms)} ms for 1 MiB`).toBeLessThan(LINEAR_BOUND_MS);
  }
}
