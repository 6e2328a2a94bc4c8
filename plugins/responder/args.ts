/**
 * Typed command arguments: `!topics 5`, `!roll 2 "big dice"`, `!search "exact words" #tag`.
 * Words are separated by spaces; "double" or 'single' quotes make one word of several (a backslash
 * makes a quote an ordinary character). A `rest` argument takes the rest of the line exactly as typed.
 */

/** The kinds of argument a command may take: a word, an integer, a number, or the rest of the line as typed. */
export const ARG_TYPES = ['string', 'int', 'number', 'rest'] as const;
/** One of ARG_TYPES. */
export type ArgType = (typeof ARG_TYPES)[number];

/** One argument of a command: its name, kind, bounds and default, as `!help` shows it. */
export interface ArgSpec {
  name: string;
  /** Default `string` (one word). */
  type?: ArgType;
  optional?: boolean;
  /** Bounds for `int` and `number`. */
  min?: number;
  max?: number;
  /** Used when an optional argument is not given. */
  default?: string | number;
  description?: string;
}

/** A command's arguments by name, parsed and checked (undefined: an optional one not given, without default). */
export type ArgValues = Record<string, string | number | undefined>;

/** A wrong argument: the user is shown the message and the command's usage. */
export class ArgumentError extends Error {
  override name = 'ArgumentError';
}

/** One word of a command line, unquoted, with where it starts. */
export interface Word {
  value: string;
  /** Where the word starts in the text (for `rest`). */
  start: number;
}

/** Splits a command line into words (quotes and backslashes as the header says), each with its place. */
export function tokenize(text: string): Word[] {
  const words: Word[] = [];
  let i = 0;
  while (i < text.length) {
    while (i < text.length && /\s/.test(text[i]!)) i += 1;
    if (i >= text.length) break;
    const start = i;
    let value = '';
    while (i < text.length && !/\s/.test(text[i]!)) {
      const quote = text[i];
      if (quote === '\\' && (text[i + 1] === '"' || text[i + 1] === "'")) {
        value += text[i + 1];
        i += 2;
      } else if (quote === '"' || quote === "'") {
        i += 1;
        let closed = false;
        while (i < text.length) {
          if (text[i] === '\\' && (text[i + 1] === quote || text[i + 1] === '\\')) {
            value += text[i + 1];
            i += 2;
          } else if (text[i] === quote) {
            closed = true;
            i += 1;
            break;
          } else {
            value += text[i];
            i += 1;
          }
        }
        if (!closed) throw new ArgumentError(`a ${quote === '"' ? 'double' : 'single'} quote is not closed`);
      } else {
        value += text[i];
        i += 1;
      }
    }
    words.push({ value, start });
  }
  return words;
}

/** Checks a list of argument specs; answers what is wrong, or undefined. */
export function specProblem(specs: readonly ArgSpec[]): string | undefined {
  const names = new Set<string>();
  let optionalSeen = false;
  for (const [index, spec] of specs.entries()) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(spec.name)) return `argument name ${JSON.stringify(spec.name)} must be letters, digits and _`;
    if (names.has(spec.name)) return `argument ${spec.name} is declared twice`;
    names.add(spec.name);
    if ((spec.type ?? 'string') === 'rest' && index !== specs.length - 1) return `argument ${spec.name} is rest, so it must be the last`;
    if (spec.optional || spec.default !== undefined) optionalSeen = true;
    else if (optionalSeen) return `argument ${spec.name} is required but follows an optional one`;
  }
  return undefined;
}

/** `<n>`, `[n]`, `<query…>`. */
export function argUsage(specs: readonly ArgSpec[]): string {
  return specs.map((spec) => {
    const name = (spec.type ?? 'string') === 'rest' ? `${spec.name}…` : spec.name;
    return spec.optional || spec.default !== undefined ? `[${name}]` : `<${name}>`;
  }).join(' ');
}

function convert(spec: ArgSpec, raw: string): string | number {
  const type = spec.type ?? 'string';
  if (type === 'string' || type === 'rest') return raw;
  let value: number;
  if (type === 'int') {
    value = /^[+-]?\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(value)) throw new ArgumentError(`${spec.name} must be a whole number, not ${JSON.stringify(raw)}`);
  } else {
    value = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isFinite(value)) throw new ArgumentError(`${spec.name} must be a number, not ${JSON.stringify(raw)}`);
  }
  if (spec.min !== undefined && value < spec.min) throw new ArgumentError(`${spec.name} must be at least ${spec.min}`);
  if (spec.max !== undefined && value > spec.max) throw new ArgumentError(`${spec.name} must be at most ${spec.max}`);
  return value;
}

/** The arguments of `text` (what follows the command's name) by their specs. */
export function parseArgs(specs: readonly ArgSpec[], text: string): ArgValues {
  const values: ArgValues = {};
  const words = tokenize(text);
  let next = 0;
  for (const spec of specs) {
    if ((spec.type ?? 'string') === 'rest') {
      const rest = next < words.length ? text.slice(words[next]!.start).trim() : '';
      next = words.length;
      if (rest !== '') {
        values[spec.name] = rest;
        continue;
      }
    } else if (next < words.length) {
      values[spec.name] = convert(spec, words[next]!.value);
      next += 1;
      continue;
    }
    if (spec.default !== undefined) values[spec.name] = spec.default;
    else if (!spec.optional) throw new ArgumentError(`${spec.name} is missing`);
  }
  if (next < words.length) throw new ArgumentError(`too many arguments (${JSON.stringify(words[next]!.value)} is one too many)`);
  return values;
}
