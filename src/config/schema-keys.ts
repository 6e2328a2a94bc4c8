import type { z } from 'zod';

type Path = ReadonlyArray<string | number>;

/** The parts of a zod 4 schema's definition the walk below reads (classic and mini share them). */
interface Def {
  type?: string;
  shape?: Record<string, unknown>;
  innerType?: unknown;
  in?: unknown;
  element?: unknown;
  options?: unknown[];
  left?: unknown;
  right?: unknown;
  valueType?: unknown;
  getter?: () => unknown;
}

function defOf(schema: unknown): Def | undefined {
  return (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;
}

/**
 * The keys an object schema allows at `path` inside `schema`, for "did you mean …?" on an unknown key.
 * Undefined when the schema is not a zod 4 schema (a plugin may bring another version) or the path
 * leads to no object.
 */
export function allowedKeys(schema: z.ZodType | unknown, path: Path): string[] | undefined {
  const keys = new Set<string>();
  collect(schema, path, keys, 0);
  return keys.size ? [...keys] : undefined;
}

function collect(schema: unknown, path: Path, keys: Set<string>, depth: number): void {
  const def = defOf(schema);
  if (!def || depth > 50) return;
  switch (def.type) {
    case 'object':
      if (path.length === 0) Object.keys(def.shape ?? {}).forEach((key) => keys.add(key));
      else if (typeof path[0] === 'string' && def.shape && Object.hasOwn(def.shape, path[0])) collect(def.shape[path[0]], path.slice(1), keys, depth + 1);
      return;
    case 'array':
      if (typeof path[0] === 'number') collect(def.element, path.slice(1), keys, depth + 1);
      return;
    case 'record':
      if (path.length > 0) collect(def.valueType, path.slice(1), keys, depth + 1);
      return;
    case 'union':
      for (const option of def.options ?? []) collect(option, path, keys, depth + 1);
      return;
    case 'intersection':
      collect(def.left, path, keys, depth + 1);
      collect(def.right, path, keys, depth + 1);
      return;
    case 'pipe':
      collect(def.in, path, keys, depth + 1);
      return;
    case 'lazy':
      collect(def.getter?.(), path, keys, depth + 1);
      return;
    default:
      // optional, nullable, default, prefault, catch, readonly, nonoptional: the schema they wrap.
      if (def.innerType) collect(def.innerType, path, keys, depth + 1);
  }
}
