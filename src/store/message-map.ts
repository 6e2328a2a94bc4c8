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
 * disk (an append-only journal, compacted every so often and at open when past due), bounded by count and age. It
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
  private file: Journal | undefined;
  /** The lines the last compaction left (one per record). */
  private compacted = 0;
  /** When the oldest record comes of age (the next write past it looks for records to forget). */
  private ageDue = Number.POSITIVE_INFINITY;
  /** Lines of beginLater() not appended yet (in memory already): they go before any other line, or by flush(). */
  private pending: Entry[] = [];
  private flushDue = false;

  private constructor(
    private readonly limits: MessageMapLimits,
    private readonly clock: () => number,
  ) {}

  /** `clock` (ms since the epoch) dates new records and ages old ones (tests and benches simulate time with it). */
  static open(path: string, limits: MessageMapLimits = DEFAULT_MAP_LIMITS, storage: Storage = FILE_STORAGE, clock: () => number = Date.now): MessageMap {
    const map = new MessageMap(limits, clock);
    const what = 'message map entry';
    const visit = (entry: unknown) => map.apply(entry as Entry);
    let read: { lines: number; complete: boolean };
    if (storage.kind === 'files') read = JsonLinesFile.forEachInFile(path, what, visit);
    else {
      const text = storage.readText(path);
      read = { lines: 0, complete: text.endsWith('\n') };
      JsonLinesFile.forEach(text, path, what, (entry) => {
        read.lines += 1;
        visit(entry);
      });
    }
    const aged = map.trim(0);
    map.compacted = map.records.size;
    // Compacted at open when past the rule of write(), when it holds lines older than max_age_days (their
    // texts leave the disk) or a line cut short by a crash; else appended to as it is: rewriting a 12 MB
    // map at every start cost a second, and memory the process kept after it.
    const due = read.lines >= map.compacted + Math.max(MAP_COMPACT_MIN, map.compacted);
    map.file = !aged && read.complete && !due ? storage.resume(path, read.lines) : storage.journal(path, map.snapshot());
    return map;
  }

  static memory(limits: MessageMapLimits = DEFAULT_MAP_LIMITS, clock: () => number = Date.now): MessageMap {
    return new MessageMap(limits, clock);
  }

  get size(): number {
    return this.records.size;
  }

  get(key: string): MapRecord | undefined {
    return this.records.get(key);
  }

  /** The record of a line by its native id on an endpoint (where it was said, or a copy of it). */
  find(endpoint: string, nativeId: string): MapRecord | undefined {
    const found = this.index.get(endpoint, nativeId) ?? this.origins.get(endpoint, nativeId);
    if (found) return found;
    const said = this.records.get(`${endpoint} ${nativeId}`);
    return said && said.origin === endpoint && said.nativeId === nativeId && namesItsLine(said) ? said : undefined;
  }

  /** The newest edit known of the message `nativeId` said on `endpoint` (what a deletion notice quotes). */
  latestEdit(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.edits.get(endpoint, nativeId);
  }

  /** Adds a line's record, unless it is known: the record kept is returned. */
  begin(record: Omit<MapRecord, 'copies' | 'at'>): MapRecord {
    return this.add(record, false);
  }

  /**
   * As begin(), the record known at once, its journal line written a little later: by flush(), before
   * the map's next line, or once the event loop turns (setImmediate), whichever comes first. For the
   * gateway's intake (#32 part 1): the other relays' senders, whose queues took the line already, write
   * it out first. A kill before the line is written leaves the line as a kill between the relays'
   * queues and the note always did (docs/gateways.md "Exactly once on each side").
   */
  beginLater(record: Omit<MapRecord, 'copies' | 'at'>): MapRecord {
    return this.add(record, true);
  }

  /** Writes the lines beginLater() left (nothing when there are none), compacting the file if it is due. */
  flush(): void {
    if (this.pending.length === 0) return;
    const lines = this.pending;
    this.pending = [];
    // A compaction writes every record, those of the lines after it too.
    for (const entry of lines) if (this.append(entry) === 'compacted') return;
  }

  private add(record: Omit<MapRecord, 'copies' | 'at'>, later: boolean): MapRecord {
    const known = this.records.get(record.key);
    if (known) return known;
    const { key, gateway, origin, platform, nativeId, kind, speaker, text, replyTo, namesParent, files, refusedFiles } = record;
    const made: MapRecord = { key, gateway, origin, platform, nativeId, kind, speaker, text, at: this.clock(), copies: {} };
    if (replyTo !== undefined) made.replyTo = replyTo;
    if (namesParent) made.namesParent = true;
    if (files?.length) made.files = files;
    if (refusedFiles?.length) made.refusedFiles = refusedFiles;
    this.write({ r: made }, later);
    return this.records.get(record.key)!;
  }

  /** A copy of line `key` now exists on `endpoint` (a chat message id, a Slack ts). */
  addCopy(key: string, endpoint: string, copy: MapCopy): void {
    const record = this.records.get(key);
    if (!record || record.copies[endpoint]?.id === copy.id) return;
    this.write({ k: key, e: endpoint, c: compactCopy(copy, copy.id) });
  }

  /**
   * One line each: applied, the oldest forgotten past the limits, then appended (or the file
   * compacted); `later`: kept for flush(). A line written now goes after those kept, which are
   * written first (as they were before this change was applied: in the journal's order).
   */
  private write(entry: Entry, later = false): void {
    if (!later) this.flush();
    this.apply(entry);
    this.trim();
    if (!this.file) return;
    if (!later) {
      this.append(entry);
      return;
    }
    // Kept, and a compaction with it: nothing is written until flush().
    this.pending.push(entry);
    if (!this.flushDue) {
      this.flushDue = true;
      setImmediate(() => {
        this.flushDue = false;
        this.flush();
      });
    }
  }

  /** Appends a line, or compacts the file once the journal is long for the records it holds. */
  private append(entry: Entry): 'appended' | 'compacted' {
    if (this.file!.lines >= this.compacted + Math.max(MAP_COMPACT_MIN, this.compacted)) {
      this.file!.rewrite(this.snapshot());
      this.compacted = this.records.size;
      return 'compacted';
    }
    this.file!.append(entry);
    return 'appended';
  }

  private apply(entry: Entry): void {
    if ('r' in entry) {
      // The entry's own object becomes the record (read from the file, or made by begin()), its
      // strings and speaker swapped for the shared ones: a copy of it would be garbage at once.
      const record = entry.r;
      const old = this.records.get(record.key);
      if (old) this.forget(old);
      const copies = record.copies;
      record.gateway = this.name(record.gateway);
      record.origin = this.name(record.origin);
      record.platform = this.name(record.platform);
      record.kind = this.name(record.kind);
      record.speaker = this.speaker(record.speaker);
      record.copies = {};
      this.records.set(record.key, record);
      this.ageDue = Math.min(this.ageDue, record.at + this.limits.maxAgeMs);
      // An edit or deletion names the message it changes: the index keeps pointing at that message.
      if (namesItsLine(record) && !keyedByOrigin(record)) this.origins.set(record.origin, record.nativeId, record);
      if (record.kind === 'edit') this.edits.set(record.origin, record.nativeId, record);
      for (const endpoint in copies) this.copy(record, endpoint, copies[endpoint]!);
      return;
    }
    const record = this.records.get(entry.k);
    if (record) this.copy(record, entry.e, entry.c);
  }

  private copy(record: MapRecord, endpoint: string, copy: MapCopy): void {
    record.copies[endpoint] = compactCopy(copy, copy.id);
    this.index.set(this.name(baseOf(endpoint)), copy.id, record);
  }

  /**
   * Forgets records past the age or count limit, oldest first (a Map keeps insertion order). Past the
   * count it forgets `room` more (1% of max_records; none at open, so a reopened map holds what it held): walking the Map from its start skips the places of the
   * records forgotten before (until the Map is rehashed), so a walk per write would cost more with each.
   * O(1) a write, amortised. True when a record went for its age.
   */
  private trim(room = Math.floor(this.limits.maxRecords / 100)): boolean {
    const now = this.clock();
    const { maxRecords, maxAgeMs } = this.limits;
    if (this.records.size <= maxRecords && now < this.ageDue) return false;
    const keep = this.records.size > maxRecords ? maxRecords - room : maxRecords;
    const oldest = now - maxAgeMs;
    let aged = false;
    this.ageDue = Number.POSITIVE_INFINITY;
    for (const record of this.records.values()) {
      if (record.at >= oldest && this.records.size <= keep) {
        this.ageDue = record.at + maxAgeMs;
        break;
      }
      aged ||= record.at < oldest;
      this.forget(record);
    }
    return aged;
  }

  private forget(record: MapRecord): void {
    this.records.delete(record.key);
    this.origins.delete(record.origin, record.nativeId, record);
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

/** A line of its own, not an edit or deletion (which name the message they change): found where it was said. */
function namesItsLine(record: MapRecord): boolean {
  return record.kind !== 'edit' && record.kind !== 'delete';
}

/** Whether the record's key is `<origin> <native id>` (as the gateways make it), compared without making that string. */
function keyedByOrigin(record: MapRecord): boolean {
  const { key, origin, nativeId } = record;
  return key.length === origin.length + 1 + nativeId.length && key.charCodeAt(origin.length) === 32 && key.startsWith(origin) && key.endsWith(nativeId);
}
