import { JsonLinesFile } from './json-lines-file.js';
import { baseOf, compactCopy, NativeIdIndex, Shared } from './map-index.js';
import type { MapCopy, MapRecord } from './map-record.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

export type { MapCopy, MapRecord } from './map-record.js';

type Entry = { r: MapRecord } | { k: string; e: string; c: MapCopy };

export interface MessageMapLimits {
  /** Records kept at most; the oldest go first. */
  maxRecords: number;
  /** Records older than this are forgotten (ms). */
  maxAgeMs: number;
}

/** bots.yaml's `message_map` defaults (max_lines 20,000, max_age_days 14). */
export const DEFAULT_MAP_LIMITS: MessageMapLimits = { maxRecords: 20_000, maxAgeMs: 14 * 24 * 3600 * 1000 };

/**
 * Journal lines appended, at the least, before the file is rewritten with one line per record: the
 * file holds at most the lines its last compaction left (max_records at most) and as many again
 * (at least this many) after them, and a compaction writes no more lines than were appended since
 * the last one (amortised, one line rewritten per line appended).
 */
export const MAP_COMPACT_MIN = 1_000;

/**
 * The gateways' message map: (endpoint, native id) ⇄ (endpoint, native id) for every relayed line, on
 * disk (an append-only journal, compacted at open and every so often), bounded by count and age. It
 * says where a line came from when the bot's own post of it comes back (`ctx.own.relayed`), keeps a
 * line taken twice (a retry after a crash) from being posted twice, and finds what a thread reply, an
 * edit or a deletion refers to on each side.
 *
 * Small in memory (#32): the lookups hold the records themselves, not key strings of their own; the
 * speakers, gateway, endpoint and platform names are one object or string each, shared by their
 * records; a copy keeps only the flags that are set.
 */
export class MessageMap {
  private readonly records = new Map<string, MapRecord>();
  /** Every copy's and origin's `<endpoint> <native id>` → its record. */
  private readonly index = new NativeIdIndex();
  /** `<origin> <native id>` of an edited message → its newest edit. */
  private readonly edits = new NativeIdIndex();
  private readonly names = new Shared<string>();
  private readonly speakers = new Shared<MapRecord['speaker']>();
  private readonly file: Journal | undefined;
  /** The lines the last compaction left (one per record). */
  private compacted = 0;

  private constructor(
    path: string | undefined,
    entries: Entry[],
    private readonly limits: MessageMapLimits,
    storage: Storage,
    private readonly clock: () => number,
  ) {
    for (const entry of entries) this.apply(entry);
    this.trim();
    this.file = path === undefined ? undefined : storage.journal(path, this.snapshot());
    this.compacted = this.records.size;
  }

  /** `clock` (ms since the epoch) dates new records and ages old ones (tests and benches simulate time with it). */
  static open(path: string, limits: MessageMapLimits = DEFAULT_MAP_LIMITS, storage: Storage = FILE_STORAGE, clock: () => number = Date.now): MessageMap {
    const entries = JsonLinesFile.parse(storage.readText(path), path, 'message map entry') as Entry[];
    return new MessageMap(path, entries, limits, storage, clock);
  }

  static memory(limits: MessageMapLimits = DEFAULT_MAP_LIMITS, clock: () => number = Date.now): MessageMap {
    return new MessageMap(undefined, [], limits, FILE_STORAGE, clock);
  }

  get size(): number {
    return this.records.size;
  }

  get(key: string): MapRecord | undefined {
    return this.records.get(key);
  }

  /** The record of a line by its native id on an endpoint (where it was said, or a copy of it). */
  find(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.index.get(endpoint, nativeId);
  }

  /** The newest edit known of the message `nativeId` said on `endpoint` (what a deletion notice quotes). */
  latestEdit(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.edits.get(endpoint, nativeId);
  }

  /** Adds a line's record, unless it is known: the record kept is returned. */
  begin(record: Omit<MapRecord, 'copies' | 'at'>): MapRecord {
    const known = this.records.get(record.key);
    if (known) return known;
    this.write({ r: { ...record, at: this.clock(), copies: {} } });
    return this.records.get(record.key)!;
  }

  /** A copy of line `key` now exists on `endpoint` (a chat message id, a Slack ts). */
  addCopy(key: string, endpoint: string, copy: MapCopy): void {
    const record = this.records.get(key);
    if (!record || record.copies[endpoint]?.id === copy.id) return;
    this.write({ k: key, e: endpoint, c: compactCopy(copy, copy.id) });
  }

  /** One line each: applied, the oldest forgotten past the limits, then appended (or the file compacted). */
  private write(entry: Entry): void {
    this.apply(entry);
    this.trim();
    if (!this.file) return;
    if (this.file.lines >= this.compacted + Math.max(MAP_COMPACT_MIN, this.compacted)) {
      this.file.rewrite(this.snapshot());
      this.compacted = this.records.size;
    } else this.file.append(entry);
  }

  private apply(entry: Entry): void {
    if ('r' in entry) {
      const { r } = entry;
      const old = this.records.get(r.key);
      if (old) this.forget(old);
      const record: MapRecord = {
        key: r.key, gateway: this.name(r.gateway), origin: this.name(r.origin), platform: this.name(r.platform), nativeId: r.nativeId,
        kind: this.name(r.kind), speaker: this.speaker(r.speaker), text: r.text, at: r.at, copies: {},
      };
      if (r.replyTo !== undefined) record.replyTo = r.replyTo;
      if (r.namesParent) record.namesParent = true;
      this.records.set(record.key, record);
      // An edit or deletion names the message it changes: the index keeps pointing at that message.
      if (record.kind !== 'edit' && record.kind !== 'delete') this.index.set(record.origin, record.nativeId, record);
      if (record.kind === 'edit') this.edits.set(record.origin, record.nativeId, record);
      for (const [endpoint, copy] of Object.entries(r.copies)) this.copy(record, endpoint, copy);
      return;
    }
    const record = this.records.get(entry.k);
    if (record) this.copy(record, entry.e, entry.c);
  }

  private copy(record: MapRecord, endpoint: string, copy: MapCopy): void {
    record.copies[endpoint] = compactCopy(copy, copy.id);
    this.index.set(this.name(baseOf(endpoint)), copy.id, record);
  }

  /** Forgets records past the age or count limit, oldest first (a Map keeps insertion order): O(1) a write, amortised. */
  private trim(): void {
    const oldest = this.clock() - this.limits.maxAgeMs;
    for (const record of this.records.values()) {
      if (record.at >= oldest && this.records.size <= this.limits.maxRecords) break;
      this.forget(record);
    }
  }

  private forget(record: MapRecord): void {
    this.records.delete(record.key);
    this.index.delete(record.origin, record.nativeId, record);
    this.edits.delete(record.origin, record.nativeId, record);
    for (const [endpoint, copy] of Object.entries(record.copies)) this.index.delete(baseOf(endpoint), copy.id, record);
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

  private snapshot(): Entry[] {
    return [...this.records.values()].map((record) => ({ r: record }));
  }
}
