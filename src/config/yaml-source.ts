import { readFile } from 'node:fs/promises';
import { isMap, isNode, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';

/** A mistake in a YAML file, located: `file:line:col: what was expected`. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

/**
 * Parses YAML text and validates it with a zod schema. Every problem (YAML syntax or schema) is
 * reported with the file, line and column of the offending node.
 */
export function parseYaml<S extends z.ZodType>(text: string, file: string, schema: S): z.infer<S> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const where = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  if (doc.errors.length > 0) {
    throw new ConfigError(doc.errors.map((error) => `${where(error.pos[0])}: ${error.message.split('\n')[0]}`));
  }
  const result = schema.safeParse(doc.toJS() ?? {});
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const path = issue.path.filter((key): key is string | number => typeof key !== 'symbol');
      const at = path.length ? ` (at ${path.join('.')})` : '';
      // An unknown key is reported where the key stands, not where its map begins.
      const offset = issue.code === 'unrecognized_keys' ? keyOffset(doc, path, issue.keys[0]) : undefined;
      return `${where(offset ?? offsetOf(doc, path))}: ${issue.message}${at}`;
    }),
  );
}

export async function readYamlFile<S extends z.ZodType>(file: string, schema: S): Promise<z.infer<S>> {
  return parseYaml(await readFile(file, 'utf8'), file, schema);
}

/** The source offset of the deepest node that exists along `path` (a missing key points at its parent). */
function offsetOf(doc: Document, path: Array<string | number>): number {
  for (let depth = path.length; depth >= 0; depth -= 1) {
    const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
    if (isNode(node) && node.range) return node.range[0];
  }
  return 0;
}

function keyOffset(doc: Document, path: Array<string | number>, key: string | undefined): number | undefined {
  const map = path.length ? doc.getIn(path, true) : doc.contents;
  if (!isMap(map) || key === undefined) return undefined;
  const pair = map.items.find((item) => isScalar(item.key) && item.key.value === key);
  return isScalar(pair?.key) ? pair.key.range?.[0] : undefined;
}
