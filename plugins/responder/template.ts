import { closeBidi } from '../../src/index.js';

/**
 * The reply templates of bots.yaml rules: text with `{{ expression }}` placeholders.
 *
 *   {{user}}  {{args.name}}  {{args}}  {{match.1}}  {{match.word}}  {{chat}}
 *   {{args.who | default: user}}  {{user | upper}}  {{"{{"}} (a literal)
 *
 * An expression is a variable path (names and numbers joined by dots) or a quoted string, followed by
 * filters: `upper`, `lower`, `trim`, `default: <path or "string">` (used when the value is empty).
 * A missing value renders as nothing. An object renders as its `$text` (so `{{args}}` is the argument
 * text as typed and `{{match}}` the whole match); a list, as its items joined by spaces.
 */

export type TemplateValue = string | number | boolean | null | undefined | TemplateValue[] | { [key: string]: TemplateValue };

type Operand = { path: string[] } | { literal: string };
interface Filter {
  name: 'upper' | 'lower' | 'trim' | 'default';
  arg?: Operand;
}
type Part = { text: string } | { operand: Operand; filters: Filter[] };

const FILTERS = ['upper', 'lower', 'trim', 'default'] as const;

/** A template that does not compile (an unclosed `{{`, an unknown filter): bots.yaml's check reports it. */
export class TemplateError extends Error {
  override name = 'TemplateError';
}

function parseOperand(source: string, where: string): Operand {
  const text = source.trim();
  const quoted = /^"((?:[^"\\]|\\.)*)"$|^'((?:[^'\\]|\\.)*)'$/.exec(text);
  if (quoted) return { literal: (quoted[1] ?? quoted[2]!).replace(/\\(.)/g, '$1') };
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/.test(text)) throw new TemplateError(`${where}: ${JSON.stringify(text)} is not a variable or a "quoted string"`);
  return { path: text.split('.') };
}

/** Splits on `|` outside quotes. */
function splitPipes(source: string): string[] {
  const pieces: string[] = [];
  let current = '';
  let quote: string | undefined;
  for (let i = 0; i < source.length; i += 1) {
    const char = source[i]!;
    if (quote) {
      current += char;
      if (char === '\\') {
        current += source[i + 1] ?? '';
        i += 1;
      } else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'") {
      quote = char;
      current += char;
    } else if (char === '|') {
      pieces.push(current);
      current = '';
    } else current += char;
  }
  pieces.push(current);
  return pieces;
}

/** A compiled reply template (the syntax is this file's header): compiled once, rendered per answer. */
export class Template {
  private constructor(
    readonly source: string,
    private readonly parts: Part[],
  ) {}

  /** Compiles a template; throws TemplateError on a mistake. */
  static compile(source: string): Template {
    const parts: Part[] = [];
    let at = 0;
    while (at < source.length) {
      const open = source.indexOf('{{', at);
      if (open < 0) {
        parts.push({ text: source.slice(at) });
        break;
      }
      if (open > at) parts.push({ text: source.slice(at, open) });
      const close = findClose(source, open + 2);
      if (close < 0) throw new TemplateError(`a {{ at character ${open + 1} is not closed with }}`);
      const where = `in {{${source.slice(open + 2, close)}}}`;
      const [head, ...rest] = splitPipes(source.slice(open + 2, close));
      if (head === undefined || head.trim() === '') throw new TemplateError(`${where}: empty placeholder`);
      const filters = rest.map((piece): Filter => {
        const colon = piece.indexOf(':');
        const name = (colon < 0 ? piece : piece.slice(0, colon)).trim();
        if (!(FILTERS as readonly string[]).includes(name)) throw new TemplateError(`${where}: unknown filter ${JSON.stringify(name)} (known: ${FILTERS.join(', ')})`);
        if (name === 'default') {
          if (colon < 0) throw new TemplateError(`${where}: default needs a value (default: "text")`);
          return { name, arg: parseOperand(piece.slice(colon + 1), where) };
        }
        if (colon >= 0) throw new TemplateError(`${where}: ${name} takes no value`);
        return { name: name as Filter['name'] };
      });
      parts.push({ operand: parseOperand(head, where), filters });
      at = close + 2;
    }
    return new Template(source, parts);
  }

  /** Every variable path the template reads. */
  variables(): string[][] {
    const paths: string[][] = [];
    for (const part of this.parts) {
      if (!('operand' in part)) continue;
      for (const operand of [part.operand, ...part.filters.map((f) => f.arg)]) if (operand && 'path' in operand) paths.push(operand.path);
    }
    return paths;
  }

  /** The text with each placeholder replaced from `context`; a missing value renders as nothing. */
  render(context: Record<string, TemplateValue>): string {
    return this.parts.map((part) => {
      if ('text' in part) return part.text;
      let value = textOf(resolve(part.operand, context));
      for (const filter of part.filters) {
        if (filter.name === 'upper') value = value.toUpperCase();
        else if (filter.name === 'lower') value = value.toLowerCase();
        else if (filter.name === 'trim') value = value.trim();
        else if (value === '') value = textOf(resolve(filter.arg!, context));
      }
      // A value is someone's text (a name, the arguments, a match): its bidi controls end with it.
      return closeBidi(value);
    }).join('');
  }
}

/** The `}}` closing a placeholder, skipping quoted strings. */
function findClose(source: string, from: number): number {
  let quote: string | undefined;
  for (let i = from; i < source.length; i += 1) {
    const char = source[i]!;
    if (quote) {
      if (char === '\\') i += 1;
      else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'") quote = char;
    else if (char === '}' && source[i + 1] === '}') return i;
  }
  return -1;
}

function resolve(operand: Operand, context: Record<string, TemplateValue>): TemplateValue {
  if ('literal' in operand) return operand.literal;
  let value: TemplateValue = context;
  for (const key of operand.path) {
    if (value === null || value === undefined || typeof value !== 'object') return undefined;
    value = Object.hasOwn(value, key) ? (value as Record<string, TemplateValue>)[key] : undefined;
  }
  return value;
}

function textOf(value: TemplateValue): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(textOf).filter(Boolean).join(' ');
  if (typeof value === 'object') return textOf(value.$text);
  return String(value);
}
