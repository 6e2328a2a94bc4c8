import { z } from 'zod';
import { botsConfigSchema } from '../../src/config/bots-config.js';
import { PLUGIN_CATALOGUE } from '../../src/config/plugin-catalogue.js';
import { moduleUrl } from '../../src/config/plugin-resolution.js';
import { isPluginDefinition } from '../../src/pipeline/plugin.js';

type JsonSchema = Record<string, unknown>;

/**
 * bots.yaml as a JSON Schema (draft 2020-12) of what a user writes (zod's input side: defaults may be
 * left out), each built-in plugin's `with:` options included: a plugin entry whose `use:` names a
 * built-in plugin takes that plugin's options schema. Editors with a YAML language server can use it
 * as it is. The refinements zod checks in code (a second bot of one name, `ops.token` off loopback)
 * are not in it: `groupwire check` is the full judge.
 */
export async function configSchemaReport(): Promise<string> {
  const schema = z.toJSONSchema(botsConfigSchema, { io: 'input' }) as JsonSchema;
  const plugins: Record<string, JsonSchema> = {};
  for (const { name } of [...PLUGIN_CATALOGUE].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const module = (await import(moduleUrl(name, '.'))) as { default?: unknown };
    if (!isPluginDefinition(module.default)) throw new Error(`plugins/${name} exports no plugin definition`);
    const options = z.toJSONSchema(module.default.options, { io: 'input' }) as JsonSchema;
    delete options.$schema;
    plugins[`plugin-${name}`] = options;
  }
  const entry = findPluginEntry(schema);
  entry.allOf = Object.keys(plugins).map((key) => ({
    if: { properties: { use: { const: key.slice('plugin-'.length) } }, required: ['use'] },
    then: { properties: { with: { $ref: `#/$defs/${key}` } } },
  }));
  schema.$defs = { ...(schema.$defs as JsonSchema | undefined), ...plugins };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

/** The schema of one `plugins:` entry: the object with `use`, `with` and `timeout_ms`. */
function findPluginEntry(schema: JsonSchema): JsonSchema {
  const found: JsonSchema[] = [];
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    if (Array.isArray(node)) return node.forEach(visit);
    const properties = (node as JsonSchema).properties as JsonSchema | undefined;
    if (properties && 'use' in properties && 'with' in properties && 'timeout_ms' in properties) found.push(node as JsonSchema);
    Object.values(node).forEach(visit);
  };
  visit(schema);
  if (found.length !== 1) throw new Error(`expected one plugin entry (use, with, timeout_ms) in the bots.yaml schema, found ${found.length}`);
  return found[0]!;
}
