import { baseOf, compactCopy } from './map-index.js';
import type { MapCopy, MapRecord } from './map-record.js';

/** A journal line of the map: a whole record, or one more copy of a record. */
export type MapEntry = { r: MapRecord } | { k: string; e: string; c: MapCopy };

/** What the cold records read their lines with and turn a record read back into the map's own form. */
export interface ColdSource {
  /** The JSON text of the line at a handle (Journal.readLine). */
  readLine(handle: number): string;
  /** A record read from disk, its names shared with the map's (MessageMap.adopt). */
  adopt(record: MapRecord): MapRecord;
}

/** Tags of the lookups, hashed with the strings they look up. */
const KEY = 1;
const COPY = 2;
const ORIGIN = 3;
const EDIT = 4;

/**
 * The message map's older records, kept on disk only (#32 part 2: the map's records were 680 bytes
 * each in the heap, 20,000 of them by default, so a bridge's memory grew with the lines until the map
 * was full). In memory, per record: where its lines are in the journal (the record's line, and the
 * lines of copies noted after it), when it was said, and a 30-bit hash per lookup it answers (its key,
 * each copy's native id, where it was said, an edit's message) → the record's number: some 150 bytes.
 * A lookup reads the candidates' lines back (one pread each) and keeps the one that really matches, so
 * a hash shared by two records costs a read, never a wrong answer.
 *
 * Numbers go up with each record (oldest first, as the map forgets them); a record replaced or
 * forgotten leaves its place empty.
 */
export class ColdRecords {
  private capacity = 1024;
  private handles = new Float64Array(this.capacity);
  private ats = new Float64Array(this.capacity);
  private live = new Uint8Array(this.capacity);
  /** The oldest number that may be live, and the next number given. */
  private head = 0;
  private tail = 0;
  private count = 0;
  /** Lines of copies noted after a record's own line (only for records that have some). */
  private readonly extras = new Map<number, number[]>();
  /** hash → number, or numbers when records share the hash. */
  private readonly lookups = new Map<number, number | number[]>();

  constructor(private readonly source: ColdSource) {}

  get size(): number {
    return this.count;
  }

  /** Takes a record (with its lines' handles, its own line first); its number is returned. */
  add(record: MapRecord, lines: readonly number[]): number {
    if (this.tail - this.head === this.capacity) this.grow();
    const seq = this.tail;
    this.tail += 1;
    const at = seq % this.capacity;
    this.handles[at] = lines[0]!;
    this.ats[at] = record.at;
    this.live[at] = 1;
    this.count += 1;
    if (lines.length > 1) this.extras.set(seq, lines.slice(1));
    for (const hash of hashesOf(record)) this.link(hash, seq);
    return seq;
  }

  /** A copy of record `seq` noted (its line at `handle`, or none yet: see placed()). */
  addCopy(seq: number, endpoint: string, copy: MapCopy): void {
    this.link(hash2(COPY, baseOf(endpoint), copy.id), seq);
  }

  /** The journal line of a copy addCopy() noted was written at `handle`. */
  placed(seq: number, handle: number): void {
    if (!this.isLive(seq)) return;
    const more = this.extras.get(seq);
    if (more) more.push(handle);
    else this.extras.set(seq, [handle]);
  }

  /** Forgets record `seq` (read back once, to unlink its lookups). */
  forget(seq: number): void {
    if (!this.isLive(seq)) return;
    const record = this.read(seq);
    for (const hash of hashesOf(record)) this.unlink(hash, seq);
    this.live[seq % this.capacity] = 0;
    this.extras.delete(seq);
    this.count -= 1;
  }

  /** The oldest live record's number and when it was said, or undefined when there is none. */
  oldest(): { seq: number; at: number } | undefined {
    while (this.head < this.tail && !this.live[this.head % this.capacity]) this.head += 1;
    return this.head < this.tail ? { seq: this.head, at: this.ats[this.head % this.capacity]! } : undefined;
  }

  /** The live records' numbers, oldest first. */
  *numbers(): Generator<number> {
    for (let seq = this.head; seq < this.tail; seq += 1) if (this.live[seq % this.capacity]) yield seq;
  }

  /** The record's line as the compacted journal holds it: its own line when no copy came after it. */
  compactText(seq: number, readLine: (handle: number) => string): string {
    if (!this.extras.has(seq)) return readLine(this.handles[seq % this.capacity]!);
    return JSON.stringify({ r: this.read(seq, readLine) });
  }

  /** After a compaction: record `seq` is one line at `handle`. */
  moved(seq: number, handle: number): void {
    this.handles[seq % this.capacity] = handle;
    this.extras.delete(seq);
  }

  /** The record read back from its lines. */
  read(seq: number, readLine: (handle: number) => string = (handle) => this.source.readLine(handle)): MapRecord {
    const first = JSON.parse(readLine(this.handles[seq % this.capacity]!)) as MapEntry;
    if (!('r' in first)) throw new Error(`message map: record ${seq} does not start at a record's line`);
    const record = this.source.adopt(first.r);
    for (const handle of this.extras.get(seq) ?? []) {
      const entry = JSON.parse(readLine(handle)) as MapEntry;
      if ('k' in entry && entry.k === record.key) record.copies[entry.e] = compactCopy(entry.c, entry.c.id);
    }
    return record;
  }

  byKey(key: string): { seq: number; record: MapRecord } | undefined {
    return this.match(hash1(KEY, key), (record) => record.key === key);
  }

  /** The record with a copy of native id `nativeId` on `endpoint` (or one of its parts), the newest first. */
  byCopy(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.match(hash2(COPY, endpoint, nativeId), (record) =>
      Object.entries(record.copies).some(([where, copy]) => copy.id === nativeId && baseOf(where) === endpoint))?.record;
  }

  /** The line said on `endpoint` as `nativeId` (not an edit or deletion of it), keyed otherwise than by it. */
  byOrigin(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.match(hash2(ORIGIN, endpoint, nativeId), (record) => record.origin === endpoint && record.nativeId === nativeId && namesItsLine(record))?.record;
  }

  /** The newest edit of the message `nativeId` said on `endpoint`. */
  latestEdit(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.match(hash2(EDIT, endpoint, nativeId), (record) => record.kind === 'edit' && record.origin === endpoint && record.nativeId === nativeId)?.record;
  }

  /** The newest live record among the hash's that `fits`. */
  private match(hash: number, fits: (record: MapRecord) => boolean): { seq: number; record: MapRecord } | undefined {
    const found = this.lookups.get(hash);
    if (found === undefined) return undefined;
    const seqs = typeof found === 'number' ? [found] : [...found].sort((a, b) => b - a);
    for (const seq of seqs) {
      if (!this.isLive(seq)) continue;
      const record = this.read(seq);
      if (fits(record)) return { seq, record };
    }
    return undefined;
  }

  /** Whether record `seq` is still kept. */
  has(seq: number): boolean {
    return this.isLive(seq);
  }

  private isLive(seq: number): boolean {
    return seq >= this.head && seq < this.tail && this.live[seq % this.capacity] === 1;
  }

  private link(hash: number, seq: number): void {
    const known = this.lookups.get(hash);
    if (known === undefined) this.lookups.set(hash, seq);
    else if (typeof known === 'number') {
      if (known !== seq) this.lookups.set(hash, [known, seq]);
    } else if (!known.includes(seq)) known.push(seq);
  }

  private unlink(hash: number, seq: number): void {
    const known = this.lookups.get(hash);
    if (known === seq) this.lookups.delete(hash);
    else if (Array.isArray(known)) {
      const rest = known.filter((other) => other !== seq);
      this.lookups.set(hash, rest.length === 1 ? rest[0]! : rest);
    }
  }

  /** Twice the places, the live ones kept at their numbers. */
  private grow(): void {
    const capacity = this.capacity * 2;
    const handles = new Float64Array(capacity);
    const ats = new Float64Array(capacity);
    const live = new Uint8Array(capacity);
    for (let seq = this.head; seq < this.tail; seq += 1) {
      handles[seq % capacity] = this.handles[seq % this.capacity]!;
      ats[seq % capacity] = this.ats[seq % this.capacity]!;
      live[seq % capacity] = this.live[seq % this.capacity]!;
    }
    this.capacity = capacity;
    this.handles = handles;
    this.ats = ats;
    this.live = live;
  }
}

/** A line of its own, not an edit or deletion (which name the message they change): found where it was said. */
export function namesItsLine(record: MapRecord): boolean {
  return record.kind !== 'edit' && record.kind !== 'delete';
}

/** Whether the record's key is `<origin> <native id>` (as the gateways make it), compared without making that string. */
export function keyedByOrigin(record: MapRecord): boolean {
  const { key, origin, nativeId } = record;
  return key.length === origin.length + 1 + nativeId.length && key.charCodeAt(origin.length) === 32 && key.startsWith(origin) && key.endsWith(nativeId);
}

/** The lookups a record answers, as the hot tier's indexes hold them. */
function hashesOf(record: MapRecord): number[] {
  const hashes = [hash1(KEY, record.key)];
  if (namesItsLine(record) && !keyedByOrigin(record)) hashes.push(hash2(ORIGIN, record.origin, record.nativeId));
  if (record.kind === 'edit') hashes.push(hash2(EDIT, record.origin, record.nativeId));
  for (const endpoint in record.copies) hashes.push(hash2(COPY, baseOf(endpoint), record.copies[endpoint]!.id));
  return hashes;
}

/** The hash a record's key is found by (two keys sharing it must still each find their own record). */
export function keyHash(key: string): number {
  return hash1(KEY, key);
}

/** FNV-1a over the tag and the strings' UTF-16 units, cut to 30 bits (a small integer in V8: no heap number per key). */
function hash1(tag: number, a: string): number {
  return mix(mix(0x811c9dc5 ^ tag, a), '') & 0x3fffffff;
}

function hash2(tag: number, a: string, b: string): number {
  return mix(mix(0x811c9dc5 ^ tag, a), b) & 0x3fffffff;
}

function mix(start: number, text: string): number {
  let hash = Math.imul(start ^ 0x20, 16777619);
  for (let i = 0; i < text.length; i += 1) hash = Math.imul(hash ^ text.charCodeAt(i), 16777619);
  return hash >>> 0;
}
