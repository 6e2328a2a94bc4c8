import { readFile } from 'node:fs/promises';
import { isMap, isNode, isScalar, LineCounter, parse as parseYamlValue, parseDocument, visit, type Document } from 'yaml';
import type { z } from 'zod';
import { nearestName } from './nearest-name.js';
import { schemaProblems } from './schema-issues.js';
import { allowedKeys } from './schema-keys.js';
import { findIndentationMistake } from './yaml-indentation.js';
import { isIndentationError, plainYamlError } from './yaml-syntax-errors.js';

/** A mistake in a YAML file, located: `file:line:col: what was expected`. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

type Path = Array<string | number>;

/**
 * A parsed YAML file that remembers where every node stands, so any later check (the schema, a
 * plugin's own options schema, an unknown chat) can name the file, line and column.
 */
export class YamlSource {
  private constructor(
    readonly file: string,
    private readonly doc: Document,
    private readonly lineCounter: LineCounter,
  ) {}

  static parse(text: string, file: string): YamlSource {
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { lineCounter, prettyErrors: false });
    const source = new YamlSource(file, doc, lineCounter);
    if (doc.errors.length > 0) {
      // An indentation mistake is reported by the parser where its consequences show (the next item,
      // often the file's last line): the line that is off is found by following the columns.
      const indentation = doc.errors.find((error) => isIndentationError(error));
      const mistake = indentation ? findIndentationMistake(text) : undefined;
      // One mistake often comes as several errors on one line: the first says it best.
      const lines = new Set<number>();
      const problems: string[] = [];
      for (const error of doc.errors) {
        const { line } = lineCounter.linePos(error.pos[0]);
        // With the line found, the parser's indentation errors are its consequences: left out.
        if (lines.has(line) || (mistake && (line >= mistake.line || isIndentationError(error, true)))) continue;
        lines.add(line);
        problems.push(`${source.at(error.pos[0])}: ${plainYamlError(error)}`);
      }
      if (mistake) {
        problems.push(`${file}:${mistake.line}:${mistake.col}: the indentation is off: ${mistake.message} (yaml: ${indentation!.message.split('\n')[0]})`);
      }
      throw new ConfigError(problems);
    }
    return source;
  }

  static async read(file: string): Promise<YamlSource> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new ConfigError([`${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
    }
    return YamlSource.parse(text, file);
  }

  /** `file:line:col` of a source offset. */
  at(offset: number): string {
    const { line, col } = this.lineCounter.linePos(offset);
    return `${this.file}:${line}:${col}`;
  }

  /** `file:line:col` of the deepest node that exists along `path` (a missing key points at its parent). */
  where(path: Path): string {
    for (let depth = path.length; depth >= 0; depth -= 1) {
      const node = depth === 0 ? this.doc.contents : this.doc.getIn(path.slice(0, depth), true);
      if (isNode(node) && node.range) return this.at(node.range[0]);
    }
    return `${this.file}:1:1`;
  }

  /**
   * Replaces `${NAME}` and `${NAME:-default}` in every string value with the environment's value
   * (`$${` stands for a literal `${`). A variable that is not set and has no default is an error.
   */
  interpolate(env: NodeJS.ProcessEnv): void {
    const problems: string[] = [];
    visit(this.doc, {
      Scalar: (_key, node) => {
        if (typeof node.value !== 'string' || !node.value.includes('${')) return;
        const whole = /^\$\{[^}]*\}$/.test(node.value) && node.type === 'PLAIN';
        node.value = node.value.replace(ENV_REFERENCE, (whole, name: string, fallback?: string) => {
          if (whole.startsWith('$$')) return whole.slice(1);
          const value = env[name];
          if (value !== undefined && value !== '') return value;
          if (fallback !== undefined) return fallback;
          problems.push(`${this.at(node.range?.[0] ?? 0)}: environment variable ${name} is not set (write \${${name}:-default} for a default)`);
          return '';
        });
        // `port: ${PORT:-8443}` is a number, as `port: 8443` would be.
        if (whole) node.value = plainScalarValue(node.value as string);
      },
    });
    if (problems.length > 0) throw new ConfigError(problems);
  }

  /** The text written at `path` before interpolate() (a string scalar), or undefined. */
  writtenAt(path: Path): string | undefined {
    const node = this.doc.getIn(path, true);
    return isScalar(node) && typeof node.value === 'string' ? node.value : undefined;
  }

  toJS(): unknown {
    return this.doc.toJS() ?? {};
  }

  /**
   * Validates `value` (found at `basePath` in this file) with a schema; problems come located. A key
   * left out whose near-miss is in the same map (`base_ur:` for `base_url:`) is said once, as the
   * unknown key with its "did you mean", not also as missing.
   */
  validate<S extends z.ZodType>(schema: S, value: unknown = this.toJS(), basePath: Path = []): z.output<S> {
    const result = schema.safeParse(value);
    if (result.success) return result.data;
    const problems = schemaProblems(result.error.issues, value, basePath);
    const suggested = new Set<string>();
    const unknown = problems.map((problem) => {
      if (problem.kind !== 'unknown') return undefined;
      const allowed = allowedKeys(schema, problem.inSchema) ?? [];
      const nearest = nearestName(problem.key, allowed);
      if (nearest) suggested.add(JSON.stringify([...problem.path, nearest]));
      return { allowed, nearest };
    });
    throw new ConfigError(problems.flatMap((problem, index) => {
      const at = problem.path.length ? ` (at ${problem.path.join('.')})` : '';
      switch (problem.kind) {
        case 'unknown':
          return [this.unknownKey(problem.path, problem.key, unknown[index]!.allowed, unknown[index]!.nearest)];
        case 'missing': {
          if (suggested.has(JSON.stringify(problem.path))) return [];
          const what = problem.expected ? describeExpected(problem.expected) : problem.message === 'Invalid input' ? undefined : problem.message;
          return [`${this.where(problem.path)}: missing key '${problem.key}'${what ? ` (${what})` : ''}${at}`];
        }
        default:
          return [`${this.where(problem.path)}: ${problem.message}${at}`];
      }
    }));
  }

  /** An unknown key, reported where the key stands (not where its map begins), with the nearest allowed one. */
  private unknownKey(path: Path, key: string, allowed: string[], nearest: string | undefined): string {
    const hint = nearest ? ` (did you mean '${nearest}'?)` : allowed.length ? ` (expected one of ${allowed.map((k) => `'${k}'`).join(', ')})` : '';
    return `${this.keyWhere(path, key) ?? this.where(path)}: unknown key '${key}'${hint} (at ${[...path, key].join('.')})`;
  }

  private keyWhere(path: Path, key: string | undefined): string | undefined {
    const map = path.length ? this.doc.getIn(path, true) : this.doc.contents;
    if (!isMap(map) || key === undefined) return undefined;
    const pair = map.items.find((item) => isScalar(item.key) && item.key.value === key);
    return isScalar(pair?.key) && pair.key.range ? this.at(pair.key.range[0]) : undefined;
  }
}

/** `${NAME}`, `${NAME:-default}` and (a literal `${`) `$${...}` in a value. */
const ENV_REFERENCE = /\$?\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** The variables `text` names that interpolate() finds unset in `env` (no default, not set or empty). */
export function unsetVariables(text: string, env: NodeJS.ProcessEnv): string[] {
  const names: string[] = [];
  for (const [whole, name, fallback] of text.matchAll(ENV_REFERENCE)) {
    if (whole.startsWith('$$') || fallback !== undefined) continue;
    if ((env[name!] ?? '') === '' && !names.includes(name!)) names.push(name!);
  }
  return names;
}

/** Parses YAML text and validates it with a zod schema, every problem located. */
export function parseYaml<S extends z.ZodType>(text: string, file: string, schema: S): z.output<S> {
  return YamlSource.parse(text, file).validate(schema);
}

export async function readYamlFile<S extends z.ZodType>(file: string, schema: S): Promise<z.output<S>> {
  return (await YamlSource.read(file)).validate(schema);
}

/** What an unquoted YAML value means: a number, boolean or null stays one; anything else is the text. */
function plainScalarValue(text: string): unknown {
  try {
    const value: unknown = parseYamlValue(text);
    return typeof value === 'number' || typeof value === 'boolean' || value === null ? value : text;
  } catch {
    return text;
  }
}

/** zod's expected type, as bots.yaml's reader knows it. */
function describeExpected(expected: string): string {
  switch (expected) {
    case 'array':
      return 'a list';
    case 'object':
      return 'a map of keys';
    default:
      return `a ${expected}`;
  }
}
