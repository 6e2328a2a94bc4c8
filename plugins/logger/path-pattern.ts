import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The transcript path pattern (`{group}/{chat}/{date}.{ext}`): its fields, safe path segments, and
 * finding the files a pattern made (the newest day of a chat, every file of a period).
 */

export const PATH_FIELDS = ['group', 'group_id', 'chat', 'chat_id', 'bot', 'date', 'year', 'month', 'day', 'ext'] as const;
export type PathField = (typeof PATH_FIELDS)[number];
export type PathValues = Partial<Record<PathField, string>>;

const DATE_FIELDS: readonly PathField[] = ['date', 'year', 'month', 'day'];
/** What a date field matches when looking for files. */
const DATE_SHAPES: Partial<Record<PathField, string>> = { date: '\\d{4}-\\d\\d-\\d\\d', year: '\\d{4}', month: '\\d\\d', day: '\\d\\d' };

export const DEFAULT_PATH = '{group}/{chat}/{date}.{ext}';

type Token = { literal: string } | { field: PathField };

/** A segment as the file system may take it: never empty, `.` or `..`, no separators or controls. */
export function safeSegment(value: string): string {
  // Letters, digits and a few quiet marks stay; everything else is %XX of its UTF-8 bytes, so two
  // different names never end up as the same file.
  let out = '';
  for (const char of value) {
    if (/[\p{L}\p{N}_\-+@=,]/u.test(char) || (char === '.' && out !== '')) out += char;
    else for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out === '') return '_';
  // Long names (most file systems stop at 255 bytes) keep a readable start and a hash of the whole.
  if (Buffer.byteLength(out) > 120) {
    const hash = createHash('sha256').update(value).digest('hex').slice(0, 12);
    out = `${[...out].slice(0, 96).join('').replace(/%[0-9A-F]?$/, '')}~${hash}`;
  }
  return out;
}

export class PathPattern {
  private constructor(
    readonly source: string,
    private readonly segments: Token[][],
  ) {}

  /** Parses and checks a pattern; throws an Error whose message says what is wrong. */
  static parse(source: string): PathPattern {
    if (source.startsWith('/') || /^[a-zA-Z]:/.test(source)) throw new Error('the path pattern must be relative to dir');
    const segments = source.split('/').map((segment) => {
      if (segment === '' || segment === '.' || segment === '..') throw new Error(`the path pattern has an empty, "." or ".." segment: ${source}`);
      const tokens: Token[] = [];
      let rest = segment;
      while (rest !== '') {
        const at = rest.indexOf('{');
        if (at < 0) {
          tokens.push({ literal: rest });
          break;
        }
        if (at > 0) tokens.push({ literal: rest.slice(0, at) });
        const end = rest.indexOf('}', at);
        if (end < 0) throw new Error(`unclosed { in the path pattern: ${source}`);
        const name = rest.slice(at + 1, end);
        if (!(PATH_FIELDS as readonly string[]).includes(name)) throw new Error(`unknown field {${name}} in the path pattern (known: ${PATH_FIELDS.map((f) => `{${f}}`).join(' ')})`);
        tokens.push({ field: name as PathField });
        rest = rest.slice(end + 1);
      }
      if (tokens.some((t) => 'literal' in t && /[\\\0]|}/.test(t.literal))) throw new Error(`the path pattern has a character it may not: ${source}`);
      return tokens;
    });
    const pattern = new PathPattern(source, segments);
    const fields = pattern.fields();
    if (!fields.has('chat_id') && !(fields.has('chat') && (fields.has('group') || fields.has('group_id')))) {
      throw new Error('the path pattern must name the chat: {chat_id}, or {chat} with {group} or {group_id}');
    }
    const dated = ['year', 'month', 'day'].filter((f) => fields.has(f as PathField));
    if (dated.length > 0 && dated.length < 3) throw new Error('the path pattern needs all of {year}, {month} and {day}, or {date}');
    return pattern;
  }

  fields(): Set<PathField> {
    return new Set(this.segments.flat().flatMap((t) => ('field' in t ? [t.field] : [])));
  }

  /** True when the pattern makes one file per day. */
  get daily(): boolean {
    const fields = this.fields();
    return fields.has('date') || fields.has('day');
  }

  /** The relative path for these values; names (group, chat, ids, bot) become safe segments. */
  render(values: PathValues): string {
    return this.segments.map((tokens) => renderTokens(tokens, values)).join('/');
  }

  /**
   * The files under `root` this pattern made for the given values, any value not given matching
   * anything; each with the values read back from its path (names as their safe segments).
   */
  async find(root: string, fixed: PathValues): Promise<Array<{ path: string; values: PathValues }>> {
    const found: Array<{ path: string; values: PathValues }> = [];
    const walk = async (dir: string, index: number, values: PathValues): Promise<void> => {
      const tokens = this.segments[index]!;
      const last = index === this.segments.length - 1;
      const open = tokens.some((t) => 'field' in t && fixed[t.field] === undefined);
      if (!open) {
        const path = join(dir, renderTokens(tokens, fixed));
        if (!last) return walk(path, index + 1, values);
        if (await isFile(path)) found.push({ path, values });
        return;
      }
      let names: string[];
      try {
        names = (await readdir(dir, { withFileTypes: true })).filter((d) => (last ? d.isFile() : d.isDirectory())).map((d) => d.name);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      const matcher = this.segmentRegex(tokens, fixed);
      for (const name of names.sort()) {
        const match = matcher.exec(name);
        if (!match) continue;
        const next = { ...values, ...(match.groups as PathValues | undefined) };
        if (last) found.push({ path: join(dir, name), values: next });
        else await walk(join(dir, name), index + 1, next);
      }
    };
    await walk(root, 0, {});
    return found;
  }

  private segmentRegex(tokens: Token[], fixed: PathValues): RegExp {
    const seen = new Set<string>();
    const body = tokens.map((t) => {
      if ('literal' in t) return escapeRegex(t.literal);
      const value = fixed[t.field];
      if (value !== undefined) return escapeRegex(renderValue(t.field, value));
      const shape = DATE_SHAPES[t.field] ?? (t.field === 'ext' ? '[a-z]+' : '[^/]+?');
      if (seen.has(t.field)) return `\\k<${t.field}>`;
      seen.add(t.field);
      return `(?<${t.field}>${shape})`;
    }).join('');
    return new RegExp(`^${body}$`, 'u');
  }
}

function renderValue(field: PathField, value: string): string {
  return DATE_FIELDS.includes(field) || field === 'ext' ? value : safeSegment(value);
}

function renderTokens(tokens: Token[], values: PathValues): string {
  return tokens.map((t) => ('literal' in t ? t.literal : renderValue(t.field, values[t.field] ?? ''))).join('');
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The day (`YYYY-MM-DD`) a found file is of, from its path values, when the pattern is daily. */
export function fileDay(values: PathValues): string | undefined {
  if (values.date) return values.date;
  if (values.year && values.month && values.day) return `${values.year}-${values.month}-${values.day}`;
  return undefined;
}
