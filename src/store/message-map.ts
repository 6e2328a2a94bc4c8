import { ColdRecords, keyedByOrigin, namesItsLine, type MapEntry as Entry } from './cold-records.js';
import { baseOf, compactCopy, NativeIdIndex, Shared } from './map-index.js';
import type { MapCopy, MapRecord } from './map-record.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

export type { MapCopy, MapRecord } from './map-record.js';

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
 * Records kept whole in memory, the newest (#32 part 2): the lines being relayed now, whose copies
 * are being noted and whose posts come back. Older ones are on disk only (ColdRecords), read back
 * when a reply, an edit or a late copy names them. A map without a file keeps all in memory.
 */
export const MAP_HOT_RECORDS = 1_000;

/**
 * The gateways' message map: (endpoint, native id) ⇄ (endpoint, native id) for every relayed line, on
 * disk (an append-only journal, compacted every so often and at open when past due), bounded by count and age. It
 * says where a line came from when the bot's own post of it comes back (`ctx.own.relayed`), keeps a
 * line taken twice (a retry after a crash) from being posted twice, and finds what a thread reply, an
 * edit or a deletion refers to on each side.
 *
 * Small in memory (#32): only the newest MAP_HOT_RECORDS records are held whole, the others are
 * found through ColdRecords and read back from the journal; the lookups hold the records themselves,
 * not key strings of their own; the speakers, gateway, endpoint and platform names are one object or
 * string each, shared by their records; a copy keeps only the flags that are set.
 */
export class MessageMap {
  /** The newest records, whole, oldest first (a Map keeps insertion order). */
  private readonly records = new Map<string, MapRecord>();
  /** Handles of each hot record's journal lines (its own first); none yet for a line beginLater() keeps. */
  private readonly lines = new Map<string, number[]>();
  private readonly cold: ColdRecords;
  /** The cold record found by key last (addCopy() reads it, then notes and places its copy). */
  private lastCold: { key: string; seq: number } | undefined;
  /** The map has a journal (open()), so older records can live there alone; memory() keeps all. */
  private backed = false;
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
    /** Reads a line of the journal before it is resumed (at open); the journal's own reads after. */
    private readonly readBeforeOpen: (handle: number) => string = () => {
      throw new Error('message map: no journal to read from');
    },
  ) {
    this.cold = new ColdRecords({ readLine: (handle) => (this.file ? this.file.readLine(handle) : this.readBeforeOpen(handle)), adopt: (record) => this.adopt(record) });
  }

  /** `clock` (ms since the epoch) dates new records and ages old ones (tests and benches simulate time with it). */
  static open(path: string, limits: MessageMapLimits = DEFAULT_MAP_LIMITS, storage: Storage = FILE_STORAGE, clock: () => number = Date.now): MessageMap {
    const map = new MessageMap(limits, clock, (handle) => storage.readLine(path, handle));
    map.backed = true;
    // Lines are applied as read; records past the newest MAP_HOT_RECORDS go on to the cold tier with
    // their lines' places, so a month's map never stands whole in memory.
    const read = storage.forEachLine(path, 'message map entry', (entry, handle) => {
      map.apply(entry as Entry, handle);
      map.evict();
    });
    const aged = map.trim(0);
    map.compacted = map.size;
    // Compacted at open when past the rule of write(), when it holds lines older than max_age_days (their
    // texts leave the disk) or a line cut short by a crash; else appended to as it is: rewriting a 12 MB
    // map at every start cost a second, and memory the process kept after it.
    const due = read.lines >= map.compacted + Math.max(MAP_COMPACT_MIN, map.compacted);
    map.file = storage.resume(path, read.lines);
    if (aged || !read.complete || due) map.compact();
    return map;
  }

  static memory(limits: MessageMapLimits = DEFAULT_MAP_LIMITS, clock: () => number = Date.now): MessageMap {
    return new MessageMap(limits, clock);
  }

  get size(): number {
    return this.records.size + this.cold.size;
  }

  /** The record of line `key`: an older one is read back from disk (a copy each time: change it through the map). */
  get(key: string): MapRecord | undefined {
    return this.records.get(key) ?? this.coldByKey(key)?.record;
  }

  /** The record of a line by its native id on an endpoint (where it was said, or a copy of it). */
  find(endpoint: string, nativeId: string): MapRecord | undefined {
    const found = this.index.get(endpoint, nativeId) ?? this.origins.get(endpoint, nativeId);
    if (found) return found;
    const key = `${endpoint} ${nativeId}`;
    const said = this.records.get(key);
    if (said) return said.origin === endpoint && said.nativeId === nativeId && namesItsLine(said) ? said : undefined;
    const old = this.cold.byCopy(endpoint, nativeId) ?? this.cold.byOrigin(endpoint, nativeId) ?? this.cold.byKey(key)?.record;
    return old && (old.key !== key || (old.origin === endpoint && old.nativeId === nativeId && namesItsLine(old))) ? old : undefined;
  }

  /** The newest edit known of the message `nativeId` said on `endpoint` (what a deletion notice quotes). */
  latestEdit(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.edits.get(endpoint, nativeId) ?? this.cold.latestEdit(endpoint, nativeId);
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
    for (const entry of lines) if (this.append(entry) === 'compacted') break;
    this.evict();
  }

  private add(record: Omit<MapRecord, 'copies' | 'at'>, later: boolean): MapRecord {
    const known = this.get(record.key);
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
    const record = this.get(key);
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
      this.evict();
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
      this.compact();
      return 'compacted';
    }
    this.placed(entry, this.file!.appendLine(entry));
    return 'appended';
  }

  /**
   * Rewrites the journal with one line per record, oldest first: the cold records' lines read back
   * (as they are when no copy came after them), the hot ones from memory; each learns its new place.
   */
  private compact(): void {
    const file = this.file!;
    const cold = [...this.cold.numbers()];
    const hot = [...this.records.values()];
    let placed = 0;
    const rewrite = (readLine: (handle: number) => string): void => {
      function* texts(map: MessageMap): Generator<string> {
        for (const seq of cold) yield map.cold.compactText(seq, readLine);
        for (const record of hot) yield JSON.stringify({ r: record });
      }
      file.rewriteTexts(texts(this), (handle) => {
        if (placed < cold.length) this.cold.moved(cold[placed]!, handle);
        else this.lines.set(hot[placed - cold.length]!.key, [handle]);
        placed += 1;
      });
    };
    // The cold records are read through one descriptor (a new map may have no file yet to open).
    if (cold.length > 0) file.withLines(rewrite);
    else rewrite(() => '');
    this.compacted = this.size;
  }

  /** An entry's journal line is at `handle`: the record it belongs to keeps the place. */
  private placed(entry: Entry, handle: number): void {
    const key = 'r' in entry ? entry.r.key : entry.k;
    if ('r' in entry) {
      if (this.records.get(key) === entry.r) this.lines.set(key, [handle]);
      return;
    }
    const lines = this.lines.get(key);
    if (lines) lines.push(handle);
    else if (!this.records.has(key)) {
      const seq = this.coldSeq(key);
      if (seq !== undefined) this.cold.placed(seq, handle);
    }
  }

  /**
   * Moves the oldest hot records to the cold tier while there are more than MAP_HOT_RECORDS, each with
   * its lines' places (a record whose line beginLater() still keeps stays until flush()).
   */
  private evict(): void {
    if (!this.backed) return;
    while (this.records.size > MAP_HOT_RECORDS) {
      const record = this.records.values().next().value!;
      const lines = this.lines.get(record.key);
      if (!lines) return;
      this.forget(record);
      this.cold.add(record, lines);
    }
  }

  /**
   * A journal line applied (read at open, or made now): a whole record, or a copy of one. `handle`:
   * where the line is, when it is known (at open); a line written now is placed by placed().
   */
  private apply(entry: Entry, handle?: number): void {
    if ('r' in entry) {
      // The entry's own object becomes the record (read from the file, or made by begin()), its
      // strings and speaker swapped for the shared ones: a copy of it would be garbage at once.
      const copies = entry.r.copies;
      const record = this.adopt(entry.r);
      const old = this.records.get(record.key);
      if (old) this.forget(old);
      else this.forgetCold(record.key);
      record.copies = {};
      this.records.set(record.key, record);
      if (handle !== undefined) this.lines.set(record.key, [handle]);
      this.ageDue = Math.min(this.ageDue, record.at + this.limits.maxAgeMs);
      // An edit or deletion names the message it changes: the index keeps pointing at that message.
      if (namesItsLine(record) && !keyedByOrigin(record)) this.origins.set(record.origin, record.nativeId, record);
      if (record.kind === 'edit') this.edits.set(record.origin, record.nativeId, record);
      for (const endpoint in copies) this.copy(record, endpoint, copies[endpoint]!);
      return;
    }
    const record = this.records.get(entry.k);
    if (record) {
      this.copy(record, entry.e, entry.c);
      if (handle !== undefined) this.lines.get(entry.k)?.push(handle);
      return;
    }
    const seq = this.coldSeq(entry.k);
    if (seq === undefined) return;
    this.cold.addCopy(seq, entry.e, entry.c);
    if (handle !== undefined) this.cold.placed(seq, handle);
  }

  /** A cold record by key, read back; remembered, so the copy addCopy() notes next needs no read again. */
  private coldByKey(key: string): { seq: number; record: MapRecord } | undefined {
    if (this.cold.size === 0) return undefined;
    const found = this.cold.byKey(key);
    if (found) this.lastCold = { key, seq: found.seq };
    return found;
  }

  private coldSeq(key: string): number | undefined {
    const last = this.lastCold;
    if (last?.key === key && this.cold.has(last.seq)) return last.seq;
    return this.coldByKey(key)?.seq;
  }

  /** A record read from disk in the map's form: its names and speaker the shared ones (its copies compact). */
  private adopt(record: MapRecord): MapRecord {
    record.gateway = this.name(record.gateway);
    record.origin = this.name(record.origin);
    record.platform = this.name(record.platform);
    record.kind = this.name(record.kind);
    record.speaker = this.speaker(record.speaker);
    return record;
  }

  private forgetCold(key: string): void {
    const seq = this.coldSeq(key);
    if (seq !== undefined) this.cold.forget(seq);
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
    if (this.size <= maxRecords && now < this.ageDue) return false;
    const keep = this.size > maxRecords ? maxRecords - room : maxRecords;
    const oldest = now - maxAgeMs;
    let aged = false;
    this.ageDue = Number.POSITIVE_INFINITY;
    // The cold records are the older ones: they go first (each read back once, to unlink it).
    for (let next = this.cold.oldest(); next; next = this.cold.oldest()) {
      if (next.at >= oldest && this.size <= keep) {
        this.ageDue = next.at + maxAgeMs;
        return aged;
      }
      aged ||= next.at < oldest;
      this.cold.forget(next.seq);
    }
    for (const record of this.records.values()) {
      if (record.at >= oldest && this.size <= keep) {
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
    this.lines.delete(record.key);
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
}
