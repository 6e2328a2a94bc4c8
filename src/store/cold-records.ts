import { HashSlots } from './hash-slots.js';
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
 * each copy's native id, where it was said, an edit's message) → the record's number. These live in
 * typed arrays made for max_lines records when the map opens (HashSlots for the lookups), about 190
 * bytes a record in all, so the map's memory does not grow as it fills.
 * A lookup reads the candidates' lines back (one pread each) and keeps the one that really matches, so
 * a hash shared by two records costs a read, never a wrong answer.
 *
 * Numbers go up with each record (oldest first, as the map forgets them); a record replaced or
 * forgotten leaves its place empty.
 */
export class ColdRecords {
  private capacity: number;
  private handles: Float64Array;
  /** The handles of the first two copies' lines noted after a record's own (-1: none): most records have two or fewer. */
  private firstExtras: Float64Array;
  private secondExtras: Float64Array;
  private ats: Float64Array;
  private live: Uint8Array;
  /** The oldest number that may be live, and the next number given. */
  private head = 0;
  private tail = 0;
  private count = 0;
  /** Lines of copies past the second noted after a record's own (only for records that have some). */
  private readonly moreExtras = new Map<number, number[]>();
  /** hash → the numbers of the records it finds. */
  private readonly lookups: HashSlots;

  /**
   * `expected`: the records it will hold (the map's max_lines): its places and lookups are made for
   * them at once, so its memory does not grow with the lines as the map fills (they double past it).
   */
  constructor(
    private readonly source: ColdSource,
    expected = 20_000,
  ) {
    let capacity = 1024;
    while (capacity < expected) capacity *= 2;
    this.capacity = capacity;
    this.handles = new Float64Array(capacity);
    this.firstExtras = new Float64Array(capacity);
    this.secondExtras = new Float64Array(capacity);
    this.ats = new Float64Array(capacity);
    this.live = new Uint8Array(capacity);
    // Three lookups a record at the least: its key and, in a gateway of the chat and a relay, two copies.
    this.lookups = new HashSlots(expected * 3);
  }

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
    this.firstExtras[at] = -1;
    this.secondExtras[at] = -1;
    this.ats[at] = record.at;
    this.live[at] = 1;
    this.count += 1;
    for (const handle of lines.slice(1)) this.placed(seq, handle);
    for (const hash of hashesOf(record)) this.lookups.add(hash, seq);
    return seq;
  }

  /** A copy of record `seq` noted (its line at `handle`, or none yet: see placed()). */
  addCopy(seq: number, endpoint: string, copy: MapCopy): void {
    this.lookups.add(hash2(COPY, baseOf(endpoint), copy.id), seq);
  }

  /** The journal line of a copy addCopy() noted was written at `handle`. */
  placed(seq: number, handle: number): void {
    if (!this.isLive(seq)) return;
    const at = seq % this.capacity;
    if (this.firstExtras[at] === -1) this.firstExtras[at] = handle;
    else if (this.secondExtras[at] === -1) this.secondExtras[at] = handle;
    else {
      const more = this.moreExtras.get(seq);
      if (more) more.push(handle);
      else this.moreExtras.set(seq, [handle]);
    }
  }

  /** Forgets record `seq` (read back once, to unlink its lookups; `readLine`: a reader of many lines, as withLines gives). */
  forget(seq: number, readLine?: (handle: number) => string): void {
    if (!this.isLive(seq)) return;
    const record = this.read(seq, readLine);
    for (const hash of hashesOf(record)) this.lookups.delete(hash, seq);
    this.live[seq % this.capacity] = 0;
    this.moreExtras.delete(seq);
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
    if (this.firstExtras[seq % this.capacity] === -1) return readLine(this.handles[seq % this.capacity]!);
    return JSON.stringify({ r: this.read(seq, readLine) });
  }

  /** After a compaction: record `seq` is one line at `handle`. */
  moved(seq: number, handle: number): void {
    const at = seq % this.capacity;
    this.handles[at] = handle;
    this.firstExtras[at] = -1;
    this.secondExtras[at] = -1;
    this.moreExtras.delete(seq);
  }

  /** The handles of the copies' lines noted after record `seq`'s own line. */
  private extrasOf(seq: number): number[] {
    const at = seq % this.capacity;
    const first = this.firstExtras[at]!;
    if (first === -1) return [];
    const second = this.secondExtras[at]!;
    return second === -1 ? [first] : [first, second, ...(this.moreExtras.get(seq) ?? [])];
  }

  /** The record read back from its lines. */
  read(seq: number, readLine: (handle: number) => string = (handle) => this.source.readLine(handle)): MapRecord {
    const first = JSON.parse(readLine(this.handles[seq % this.capacity]!)) as MapEntry;
    if (!('r' in first)) throw new Error(`message map: record ${seq} does not start at a record's line`);
    const record = this.source.adopt(first.r);
    for (const handle of this.extrasOf(seq)) {
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
    for (const seq of this.lookups.get(hash)) {
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

  /** Twice the places, the live ones kept at their numbers. */
  private grow(): void {
    const capacity = this.capacity * 2;
    const moved = (from: Float64Array): Float64Array => {
      const to = new Float64Array(capacity);
      for (let seq = this.head; seq < this.tail; seq += 1) to[seq % capacity] = from[seq % this.capacity]!;
      return to;
    };
    const live = new Uint8Array(capacity);
    for (let seq = this.head; seq < this.tail; seq += 1) live[seq % capacity] = this.live[seq % this.capacity]!;
    this.handles = moved(this.handles);
    this.firstExtras = moved(this.firstExtras);
    this.secondExtras = moved(this.secondExtras);
    this.ats = moved(this.ats);
    this.live = live;
    this.capacity = capacity;
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
