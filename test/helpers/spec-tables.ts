import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Reads the objects of part 2 of the spec into field tables, so tests check real answers against the
 * spec itself. The spec lives beside the repository (../shared/spec/group-discussion-api.md) where the
 * team works; a clean clone on a CI machine has only the repository, so a copy is kept in
 * test/fixtures/spec/, and where both exist a test checks the copy is the spec, word for word. Part 2 writes its objects in three ways: markdown tables (`| Field | Type |`,
 * `| Type | Fields |`, `| Resource | Fields |`), prose lists ("`id`, strings `a`, `b`; booleans `c`")
 * and bullet lists of flags (perms); each is read here. The reader is strict: a name whose type it
 * cannot tell is an error, so a new way of writing in the spec shows up as a failing test, not as
 * fields silently left unchecked. Only the current form is read; "older form" sentences are skipped.
 */

/** The spec beside the repository, when this checkout has it. */
export const SHARED_SPEC_FILE = fileURLToPath(new URL('../../../shared/spec/group-discussion-api.md', import.meta.url));
/** The repository's copy of it. */
export const SPEC_COPY_FILE = fileURLToPath(new URL('../fixtures/spec/group-discussion-api.md', import.meta.url));
export const SPEC_FILE = existsSync(SHARED_SPEC_FILE) ? SHARED_SPEC_FILE : SPEC_COPY_FILE;

/** A field's type as part 2 gives it. `object`/`array` name what they hold when the spec says. */
export type FieldType =
  | { kind: 'id' | 'opaque' | 'timestamp' | 'string' | 'enum' | 'boolean' | 'number' }
  | { kind: 'object'; of?: string }
  | { kind: 'array'; of?: string };

export interface ObjectTable {
  /** The table's name: the `object` value for resources, else a name of ours (`attachment`, `topic list`). */
  name: string;
  /** The value of `object` the spec gives the resource, when it names one. */
  objectName?: string;
  fields: Map<string, FieldType>;
}

export type SpecTables = Map<string, ObjectTable>;

const TYPE_WORDS: Record<string, FieldType['kind']> = {
  id: 'id', opaque: 'opaque', timestamp: 'timestamp', string: 'string', strings: 'string', enum: 'enum',
  boolean: 'boolean', booleans: 'boolean', number: 'number', numbers: 'number', object: 'object', array: 'array',
};

function plural(word: string): boolean {
  return ['strings', 'booleans', 'numbers'].includes(word);
}

/** Reads a type phrase ("enum string", "perms object", "array of member_info", "string: ..."). */
export function typeOf(phrase: string): FieldType | undefined {
  const text = phrase.trim().replace(/`/g, '');
  const objectOf = /^(\w+) object\b/.exec(text);
  if (objectOf) return { kind: 'object', of: objectOf[1] };
  const arrayOf = /^array of (\w+)/.exec(text);
  if (arrayOf) return { kind: 'array', of: arrayOf[1] };
  if (/^enum\b/.test(text)) return { kind: 'enum' };
  const first = /^(\w+)/.exec(text)?.[1] ?? '';
  const kind = TYPE_WORDS[first];
  return kind ? ({ kind } as FieldType) : undefined;
}

/** The conventions of part 2: ids and timestamps named by the spec, for names given without a type. */
function typeByName(name: string, timestampNames: Set<string>): FieldType | undefined {
  if (name === 'id' || name.endsWith('_id')) return { kind: 'id' };
  if (timestampNames.has(name)) return { kind: 'timestamp' };
  return undefined;
}

/** Splits at commas and semicolons outside parentheses; each piece keeps whether a `;` ended it. */
function splitItems(text: string): Array<{ item: string; endsSegment: boolean }> {
  const items: Array<{ item: string; endsSegment: boolean }> = [];
  let depth = 0;
  let current = '';
  for (const char of text) {
    if (char === '(') depth += 1;
    if (char === ')') depth -= 1;
    if (depth === 0 && (char === ',' || char === ';')) {
      items.push({ item: current.trim(), endsSegment: char === ';' });
      current = '';
    } else {
      current += char;
    }
  }
  if (current.trim()) items.push({ item: current.trim(), endsSegment: true });
  return items;
}

/**
 * Reads a prose field list: "`id`, `created` (timestamp), strings `a`, `b`; number `n`; array `h` of
 * hashtag". A leading type word types its item; a plural one ("strings") also the untyped items after
 * it in the same `;` segment. A trailing "(type)" types its item; a plural one also the untyped items
 * before it. Other items are typed by the naming conventions, else the reader fails.
 */
export function readProseFields(text: string, timestampNames: Set<string>, context: string): Map<string, FieldType> {
  const fields = new Map<string, FieldType>();
  let carried: FieldType | undefined;
  let untyped: string[] = [];
  for (const { item, endsSegment } of splitItems(text.replace(/\.\s*$/, ''))) {
    const names = [...item.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    if (names.length !== 1) throw new Error(`${context}: cannot read "${item}"`);
    const name = names[0]!;
    const before = item.slice(0, item.indexOf('`')).trim();
    const after = item.slice(item.lastIndexOf('`') + 1).trim();
    let type: FieldType | undefined;
    if (before) {
      type = typeOf(before);
      if (!type) throw new Error(`${context}: unknown type "${before}" of ${name}`);
      carried = plural(before.split(/\s+/)[0]!) ? type : undefined;
    } else if (carried) {
      type = carried;
    }
    const ofTable = /^of (\w+)/.exec(after);
    if (ofTable && type?.kind === 'array') type = { kind: 'array', of: ofTable[1] };
    const note = /^\(([^)]*)\)/.exec(after)?.[1];
    const noteType = note ? typeOf(note) : undefined;
    if (noteType) {
      type = noteType;
      if (plural(note!.split(/\s+/)[0]!)) for (const earlier of untyped) fields.set(earlier, noteType);
      untyped = [];
    }
    type ??= typeByName(name, timestampNames);
    if (type) fields.set(name, type);
    else untyped.push(name);
    if (endsSegment) carried = undefined;
  }
  if (untyped.length > 0) throw new Error(`${context}: no type for ${untyped.join(', ')}`);
  return fields;
}

/** The rows of the markdown table starting at or after `from` in `lines`, as arrays of cells. */
function tableRows(lines: string[], from: number): string[][] {
  let at = from;
  while (at < lines.length && !lines[at]!.startsWith('|')) at += 1;
  const rows: string[][] = [];
  for (; at < lines.length && lines[at]!.startsWith('|'); at += 1) {
    const cells = lines[at]!.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim());
    if (cells.every((cell) => /^-+$/.test(cell))) continue;
    rows.push(cells);
  }
  return rows.slice(1); // the header row
}

/** Backticked names of a cell, or its comma-separated bare words when it has no backticks. */
function namesIn(cell: string): string[] {
  const ticked = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  return ticked.length > 0 ? ticked : cell.split(',').map((name) => name.trim()).filter(Boolean);
}

/** Part 2 of the spec, by subsection heading ("2.6 group (object `group`)" → its lines). */
function sections(markdown: string): Array<{ heading: string; lines: string[] }> {
  const part2 = markdown.split(/^## /m).find((part) => part.startsWith('2.'));
  if (!part2) throw new Error('the spec has no part 2');
  return part2.split(/^### /m).slice(1).map((text) => {
    const [heading, ...lines] = text.split('\n');
    return { heading: heading!.trim(), lines };
  });
}

export function readSpecTables(markdown = readFileSync(SPEC_FILE, 'utf8')): SpecTables {
  const tables: SpecTables = new Map();
  const conventions = markdown.split(/^### /m)[0]!;
  const timestampLine = /Timestamps \(([^)]*)\)/.exec(conventions)?.[1] ?? '';
  const timestampNames = new Set([...timestampLine.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  const add = (name: string, fields: Map<string, FieldType>, objectName?: string) => {
    if (objectName) fields.set('object', { kind: 'string' });
    tables.set(name, { name, objectName, fields });
  };
  let groupEnums: { heading: string; lines: string[] } | undefined;
  const parts = sections(markdown);
  for (const { heading, lines } of parts) {
    const text = lines.join('\n');
    const number = /^[\d.a-z]+/.exec(heading)?.[0] ?? '';
    const objectName = /\(object `([^`]+)`\)/.exec(heading)?.[1];
    if (number === '2.1' || number === '2.2' || number === '2.3') {
      const name = /^[\d.]+\s+(\w+)/.exec(heading)![1]!;
      const fields = new Map<string, FieldType>();
      for (const [field, type] of tableRows(lines, 0)) fields.set(field!, typeOf(type!) ?? failType(heading, type!));
      add(name, fields, name);
      if (number === '2.3') readListMembers(text, lines, tables);
    } else if (number === '2.4') {
      add('perms', readPermFlags(lines), 'perms');
    } else if (number === '2.5') {
      const subscription = new Map<string, FieldType>();
      for (const [cell, type] of tableRows(lines, 0)) {
        for (const name of namesIn(cell!)) subscription.set(name, typeOf(type!) ?? failType(heading, type!));
      }
      add('subscription', subscription, 'subscription');
      const adds = /it adds: (.*)$/m.exec(text)?.[1];
      if (!adds) throw new Error('2.5: member_info additions not found');
      const optional = /except that (.*?) are not always present/.exec(text)?.[1] ?? '';
      const memberInfo = new Map(subscription);
      for (const name of namesIn(optional)) memberInfo.delete(name);
      for (const [name, type] of readProseFields(adds, timestampNames, '2.5 member_info')) memberInfo.set(name, type);
      add('member_info', memberInfo, 'member_info');
    } else if (number === '2.6') {
      const fields = new Map<string, FieldType>();
      for (const [type, cell] of tableRows(lines, 0)) {
        if (/see table 2\.12/.test(cell!)) continue; // the enum fields, read with 2.12 below
        for (const name of namesIn(cell!)) {
          // "id / number": the ids are those named as ids (`id`, `*_id`, and `subgroupcategoryid`, an id
          // written without its underscore), the rest are numbers (counts and day limits).
          const isId = name === 'id' || name.endsWith('_id') || /^\w+categoryid$/.test(name);
          const fieldType = type === 'id / number' ? { kind: isId ? 'id' : 'number' } as FieldType
            : typeOf(name === 'perms' ? 'perms object' : type!) ?? failType(heading, type!);
          fields.set(name, fieldType);
        }
      }
      add('group', fields, 'group');
    } else if (number === '2.11') {
      for (const [resource, cell] of tableRows(lines, 0)) {
        const name = /\(`([^`]+)`\)/.exec(resource!)?.[1] ?? failType(heading, resource!);
        add(name, readProseFields(cell!, timestampNames, `2.11 ${name}`), name);
      }
    } else if (number === '2.12') {
      groupEnums = { heading, lines };
    } else if (objectName) {
      // 2.7 to 2.10: a prose list, then perhaps "(... absent in the older form.)" and element lists.
      const [first, ...rest] = text.trim().split('\n').filter((line) => line.trim() !== '');
      add(objectName, readProseFields(first!.replace(/\s*\([^()]*older form[^()]*\)\s*$/, ''), timestampNames, heading), objectName);
      for (const line of rest) {
        const element = /^(\w+) element: (.*)$/.exec(line.trim());
        if (element) add(element[1]!.toLowerCase(), readProseFields(element[2]!, timestampNames, `${heading} ${element[1]}`));
      }
    }
  }
  if (!groupEnums) throw new Error('the spec has no table 2.12');
  readEnumTable(groupEnums.lines, tables);
  linkArrays(tables);
  return tables;
}

function failType(where: string, text: string): never {
  throw new Error(`${where}: cannot read the type "${text}"`);
}

/** 2.3: the list members of topic and message lists, and the strings some lists also carry. */
function readListMembers(text: string, lines: string[], tables: SpecTables): void {
  const start = lines.findIndex((line) => line.startsWith('| Member'));
  const kinds = new Map<string, Map<string, FieldType>>();
  for (const [member, type, presentIn] of tableRows(lines, start)) {
    for (const kind of presentIn!.split(',').map((k) => k.trim())) {
      if (!kinds.has(kind)) kinds.set(kind, new Map());
      kinds.get(kind)!.set(member!, typeOf(type!) ?? failType('2.3', type!));
    }
  }
  const carries = /In the (.*?) responses the list object also carries the strings (.*)\.$/m.exec(text);
  if (!carries) throw new Error('2.3: the strings lists carry were not found');
  const strings = namesIn(carries[2]!);
  // "activity log, topic list and message list" → the kinds named in the member table, and the log.
  const carriers = carries[1]!.split(/,\s*|\s+and\s+/).map((k) => k.trim());
  const allKinds = new Set([...kinds.keys(), 'activity log']);
  for (const kind of allKinds) {
    const fields = kinds.get(kind) ?? new Map<string, FieldType>();
    const carried = carriers.some((c) => c === kind || (c === 'message list' && kind.endsWith('messages')));
    if (carried) for (const name of strings) fields.set(name, { kind: 'string' });
    kinds.set(kind, fields);
  }
  for (const [kind, fields] of kinds) tables.set(kind, { name: kind, fields });
}

/** 2.4: the flag bullets of the current form; each flag is a boolean. */
function readPermFlags(lines: string[]): Map<string, FieldType> {
  const fields = new Map<string, FieldType>();
  for (const line of lines) {
    const bullet = /^- ([^:]+):(.*)$/.exec(line);
    if (!bullet || /older/i.test(bullet[1]!)) continue;
    for (const name of namesIn(bullet[2]!)) fields.set(name, { kind: 'boolean' });
  }
  if (fields.size === 0) throw new Error('2.4: no flags found');
  return fields;
}

/**
 * 2.12: each enum field goes to the object that names it: `group.x`, `topic/hashtag x`, or a bare name
 * that is a field of one of the other tables. The remaining bare names are the group's (its table says
 * "enum string: see table 2.12"). `_photos` after `max_photo_size_email` reads as `max_photo_size_photos`.
 */
function readEnumTable(lines: string[], tables: SpecTables): void {
  const group = tables.get('group')!;
  for (const [cell] of tableRows(lines, 0)) {
    const owners = /^([\w/]+)\.(\w+)$/.exec(cell!) ?? /^(\w+\/\w+) (\w+)$/.exec(cell!);
    if (owners) {
      for (const owner of owners[1]!.split('/')) tables.get(owner)?.fields.set(owners[2]!, { kind: 'enum' });
      continue;
    }
    // Notes after the names ("(member fields)", "items") do not name fields.
    const names = cell!.replace(/\s*\(.*\)$/, '').replace(/ items$/, '').split(',').map((n) => n.trim());
    let stem = '';
    for (const raw of names) {
      if (raw.includes('*')) continue; // a pattern of member fields already typed by 2.5
      const name = raw.startsWith('_') ? `${stem}${raw}` : raw;
      if (!raw.startsWith('_')) stem = name.replace(/_[^_]+$/, '');
      const elsewhere = [...tables.values()].some((t) => t !== group && t.fields.has(name));
      if (!elsewhere) group.fields.set(name, { kind: 'enum' });
    }
  }
}

/** An array without "of" holds the elements of the table named by its singular ("attachments" → attachment). */
function linkArrays(tables: SpecTables): void {
  for (const table of tables.values()) {
    for (const [name, type] of table.fields) {
      if (type.kind === 'array' && !type.of && tables.has(name.replace(/s$/, ''))) {
        table.fields.set(name, { kind: 'array', of: name.replace(/s$/, '') });
      }
    }
  }
}
