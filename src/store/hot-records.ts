import { keyedByOrigin, namesItsLine } from './cold-records.js';
import { baseOf, compactCopy, NativeIdIndex, Shared } from './map-index.js';
import type { MapCopy, MapRecord } from './map-record.js';

/**
 * The message map's newest records, whole in memory (the lines being relayed now: their copies are
 * being noted, their posts coming back), with where each one's journal lines are, so it can move on to
 * the cold tier (ColdRecords) as it ages.
 *
 * Small in memory (#32): the lookups hold the records themselves, not key strings of their own; the
 * speakers, gateway, endpoint and platform names are one object or string each, shared by their
 * records (those read back from the cold tier too); a copy keeps only the flags that are set.
 */
export class HotRecords {
  /** Oldest first (a Map keeps insertion order). */
  private readonly records = new Map<string, MapRecord>();
  /** Handles of each record's journal lines (its own first); none yet for a line beginLater() keeps. */
  private readonly lines = new Map<string, number[]>();
  /** Every copy's `<endpoint> <native id>` → its record. */
  private readonly index = new NativeIdIndex();
  /**
   * Where a line was said → its record, only for a record whose key is not `<origin> <native id>`: the
   * others are found in `records` by that key (an entry per record here cost some 70 bytes of 740).
   */
  private readonly origins = new NativeIdIndex();
  /** `<origin> <native id>` of an edited message → its newest edit. */
  private readonly edits = new NativeIdIndex();
  private readonly names = new Shared<string>();
  private readonly speakers = new Shared<MapRecord['speaker']>();

  get size(): number {
    return this.records.size;
  }

  get(key: string): MapRecord | undefined {
    return this.records.get(key);
  }

  has(key: string): boolean {
    return this.records.has(key);
  }

  /** Oldest first. */
  values(): IterableIterator<MapRecord> {
    return this.records.values();
  }

  /** The oldest record and its lines' handles (undefined while a line of it is not written yet). */
  oldest(): { record: MapRecord; lines: number[] | undefined } | undefined {
    const record = this.records.values().next().value;
    return record ? { record, lines: this.lines.get(record.key) } : undefined;
  }

  /**
   * The record of a line by its native id on an endpoint, when it is hot. `settled`: the answer is
   * final (a record keyed `<endpoint> <native id>` is here, whether or not it is that line).
   */
  find(endpoint: string, nativeId: string): { record: MapRecord | undefined; settled: boolean } {
    const found = this.index.get(endpoint, nativeId) ?? this.origins.get(endpoint, nativeId);
    if (found) return { record: found, settled: true };
    const said = this.records.get(`${endpoint} ${nativeId}`);
    if (!said) return { record: undefined, settled: false };
    return { record: said.origin === endpoint && said.nativeId === nativeId && namesItsLine(said) ? said : undefined, settled: true };
  }

  latestEdit(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.edits.get(endpoint, nativeId);
  }

  /**
   * Takes a record (its own object: read from the file, or made by begin()), with its copies; `handle`:
   * where its line is, when known. Returns the record in the map's form.
   */
  add(record: MapRecord, handle?: number): MapRecord {
    const copies = record.copies;
    this.adopt(record);
    record.copies = {};
    this.records.set(record.key, record);
    if (handle !== undefined) this.lines.set(record.key, [handle]);
    // An edit or deletion names the message it changes: the index keeps pointing at that message.
    if (namesItsLine(record) && !keyedByOrigin(record)) this.origins.set(record.origin, record.nativeId, record);
    if (record.kind === 'edit') this.edits.set(record.origin, record.nativeId, record);
    for (const endpoint in copies) this.addCopy(record, endpoint, copies[endpoint]!);
    return record;
  }

  addCopy(record: MapRecord, endpoint: string, copy: MapCopy, handle?: number): void {
    record.copies[endpoint] = compactCopy(copy, copy.id);
    this.index.set(this.name(baseOf(endpoint)), copy.id, record);
    if (handle !== undefined) this.lines.get(record.key)?.push(handle);
  }

  /** The journal line of record `key` (its own when `own`, else a copy's) is at `handle`; false when the record is not here. */
  placed(key: string, handle: number, own: boolean): boolean {
    if (!this.records.has(key)) return false;
    if (own) this.lines.set(key, [handle]);
    else this.lines.get(key)?.push(handle);
    return true;
  }

  forget(record: MapRecord): void {
    this.records.delete(record.key);
    this.lines.delete(record.key);
    this.origins.delete(record.origin, record.nativeId, record);
    this.edits.delete(record.origin, record.nativeId, record);
    for (const [endpoint, copy] of Object.entries(record.copies)) this.index.delete(baseOf(endpoint), copy.id, record);
  }

  /** A record's names and speaker swapped for the shared ones (a copy of each would be garbage at once). */
  adopt(record: MapRecord): MapRecord {
    record.gateway = this.name(record.gateway);
    record.origin = this.name(record.origin);
    record.platform = this.name(record.platform);
    record.kind = this.name(record.kind);
    record.speaker = this.speaker(record.speaker);
    return record;
  }

  private name(value: string): string {
    return this.names.of(value, () => value);
  }

  private speaker(speaker: MapRecord['speaker']): MapRecord['speaker'] {
    const { platform, id, name, email } = speaker;
    return this.speakers.of(`${platform}\u0000${id}\u0000${name}\u0000${email ?? ''}`, () => ({
      platform: this.name(platform), id, name, ...(email !== undefined ? { email } : {}),
    }));
  }
}
