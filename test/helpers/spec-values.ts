import { isLosslessNumber } from 'lossless-json';
import type { IdStyle } from '../../src/service/ids.js';
import type { FieldType, SpecTables } from './spec-tables.js';

/**
 * Checks answers against the spec's field tables (spec-tables.ts): every field present, of its type.
 * Two views of the same answers: as the client hands them on (`client`: ids are strings of their exact
 * text), and as they are on the wire, parsed by lossless-json without a reviver (every number a
 * LosslessNumber), where ids keep the service's id style: JSON integers in the numeric and big
 * styles, JSON strings in the opaque style.
 */
export type View = 'client' | IdStyle;

/** Fields whose `null` is our documented decision (docs/protocol.md), not a missing value. */
export const NULLABLE = new Set([
  'chat.chat_sub', // "a chat's chat_sub is the caller's subscription, or null when the caller has none"
]);

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

export class SpecChecker {
  readonly problems: string[] = [];
  /** The tables some answer was checked against. */
  readonly checked = new Set<string>();
  /** `table.field` of every field seen with a value other than null. */
  readonly seen = new Set<string>();

  constructor(private readonly tables: SpecTables, private readonly view: View) {}

  /** Checks `value` as an object of table `name`; `path` names it in problems. */
  object(value: unknown, name: string, path: string, objectName?: string): void {
    const table = this.tables.get(name);
    if (!table) throw new Error(`the spec has no table ${name}`);
    this.checked.add(name);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.problems.push(`${path}: not an object (${name}): ${String(value)}`);
      return;
    }
    const record = value as Record<string, unknown>;
    const expectedObject = objectName ?? table.objectName;
    for (const [field, type] of table.fields) {
      const at = `${path}.${field}`;
      if (!(field in record)) {
        this.problems.push(`${at}: missing (${name})`);
        continue;
      }
      const fieldValue = record[field];
      if (field === 'object' && expectedObject !== undefined) {
        if (fieldValue !== expectedObject) this.problems.push(`${at}: ${String(fieldValue)}, not ${expectedObject}`);
        continue;
      }
      if (fieldValue === null && NULLABLE.has(`${name}.${field}`)) continue;
      this.seen.add(`${name}.${field}`);
      this.value(fieldValue, type, at);
    }
  }

  /** A list of spec 2.3 whose elements are `items` and which carries the members of `kind` (if any). */
  list(value: unknown, items: string, path: string, kind?: string): void {
    this.object(value, 'list', path);
    if (kind) this.object(value, kind, path, 'list');
    const data = (value as { data?: unknown })?.data;
    if (!Array.isArray(data) || data.length === 0) {
      this.problems.push(`${path}.data: no ${items} to check`);
      return;
    }
    data.forEach((item, index) => this.object(item, items, `${path}.data[${index}]`));
  }

  private value(value: unknown, type: FieldType, at: string): void {
    const fail = (what: string) => this.problems.push(`${at}: ${what}, got ${describe(value)}`);
    switch (type.kind) {
      case 'id':
      case 'opaque':
        // The last page's next_page_token is the number 0 in every id style (docs/protocol.md "Lists").
        if (at.endsWith('.next_page_token') && this.view === 'opaque' && isLosslessNumber(value) && value.value === '0') return;
        if (!this.isId(value)) fail(`an id in the ${this.view} view`);
        return;
      case 'timestamp':
        if (typeof value !== 'string' || !RFC3339.test(value) || Number.isNaN(Date.parse(value))) fail('an RFC 3339 time');
        return;
      case 'string':
        if (typeof value !== 'string') fail('a string');
        return;
      case 'enum':
        if (typeof value !== 'string' || !/^[a-z][a-z0-9_]*$/.test(value)) fail('an enum value (lower_snake_case)');
        return;
      case 'boolean':
        if (typeof value !== 'boolean') fail('a boolean');
        return;
      case 'number':
        if (!this.isNumber(value)) fail('a number');
        return;
      case 'object':
        if (type.of) this.object(value, type.of, at);
        else if (value === null || typeof value !== 'object' || Array.isArray(value)) fail('an object');
        return;
      case 'array':
        if (!Array.isArray(value)) fail('an array');
        else if (type.of) value.forEach((item, index) => this.object(item, type.of!, `${at}[${index}]`));
        return;
    }
  }

  private isNumber(value: unknown): boolean {
    if (this.view === 'client') return typeof value === 'number' && Number.isFinite(value);
    return isLosslessNumber(value) && Number.isFinite(Number(value.value));
  }

  private isId(value: unknown): boolean {
    if (this.view === 'client' || this.view === 'opaque') {
      return typeof value === 'string' && value.length > 0 && value.length <= 255;
    }
    // Numeric and big styles: a bare JSON integer, every digit kept (big ids pass 2^53, unset ones are 0).
    return isLosslessNumber(value) && /^\d{1,255}$/.test(value.value);
  }
}

function describe(value: unknown): string {
  if (isLosslessNumber(value)) return `the number ${value.value}`;
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
