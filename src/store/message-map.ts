import { ColdRecords, namesItsLine, type MapEntry as Entry } from './cold-records.js';
import { HotRecords } from './hot-records.js';
import { DEFAULT_MAP_LIMITS, MAP_COMPACT_MIN, MAP_HOT_RECORDS, type MessageMapLimits } from './map-limits.js';
import { compactCopy } from './map-index.js';
import type { MapCopy, MapRecord } from './map-record.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

export type { MapCopy, MapRecord } from './map-record.js';

export { DEFAULT_MAP_LIMITS, MAP_COMPACT_MIN, MAP_HOT_RECORDS, type MessageMapLimits } from './map-limits.js';

/**
 * The gateways' message map: (endpoint, native id) ⇄ (endpoint, native id) for every relayed line, on
 * disk (an append-only journal, compacted every so often and at open when past due), bounded by count and age. It
 * says where a line came from when the bot's own post of it comes back (`ctx.own.relayed`), keeps a
 * line taken twice (a retry after a crash) from being posted twice, and finds what a thread reply, an
 * edit or a deletion refers to on each side.
 *
 * Small in memory (#32): only the newest MAP_HOT_RECORDS records are held whole (HotRecords); older
 * ones are found through ColdRecords and read back from the journal.
 */
export class MessageMap {
  private readonly hot = new HotRecords();
  private readonly cold: ColdRecords;
  /** The cold record found by key last (addCopy() reads it, then notes and places its copy). */
  private lastCold: { key: string; seq: number } | undefined;
  /** The map has a journal (open()), so older records can live there alone; memory() keeps all. */
  private backed = false;
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
    this.cold = new ColdRecords({ readLine: (handle) => (this.file ? this.file.readLine(handle) : this.readBeforeOpen(handle)), adopt: (record) => this.hot.adopt(record) }, limits.maxRecords);
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
    return this.hot.size + this.cold.size;
  }

  /** The record of line `key`: an older one is read back from disk (a copy each time: change it through the map). */
  get(key: string): MapRecord | undefined {
    return this.hot.get(key) ?? this.coldByKey(key)?.record;
  }

  /** The record of a line by its native id on an endpoint (where it was said, or a copy of it). */
  find(endpoint: string, nativeId: string): MapRecord | undefined {
    const hot = this.hot.find(endpoint, nativeId);
    if (hot.settled || this.cold.size === 0) return hot.record;
    const key = `${endpoint} ${nativeId}`;
    const old = this.cold.byCopy(endpoint, nativeId) ?? this.cold.byOrigin(endpoint, nativeId) ?? this.cold.byKey(key)?.record;
    return old && (old.key !== key || (old.origin === endpoint && old.nativeId === nativeId && namesItsLine(old))) ? old : undefined;
  }

  /** The newest edit known of the message `nativeId` said on `endpoint` (what a deletion notice quotes). */
  latestEdit(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.hot.latestEdit(endpoint, nativeId) ?? (this.cold.size > 0 ? this.cold.latestEdit(endpoint, nativeId) : undefined);
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
    return this.hot.get(record.key)!;
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

  /**
   * Appends a line, then compacts the file once the journal is long for the records it holds. The line
   * goes first: a copy of a cold record is on disk only in its line, which the compaction then takes in.
   */
  private append(entry: Entry): 'appended' | 'compacted' {
    this.placed(entry, this.file!.appendLine(entry));
    if (this.file!.lines < this.compacted + Math.max(MAP_COMPACT_MIN, this.compacted)) return 'appended';
    this.compact();
    return 'compacted';
  }

  /**
   * Rewrites the journal with one line per record, oldest first: the cold records' lines read back
   * (as they are when no copy came after them), the hot ones from memory; each learns its new place.
   */
  private compact(): void {
    const file = this.file!;
    const cold = [...this.cold.numbers()];
    const hot = [...this.hot.values()];
    let placed = 0;
    const rewrite = (readLine: (handle: number) => string): void => {
      function* texts(map: MessageMap): Generator<string> {
        for (const seq of cold) yield map.cold.compactText(seq, readLine);
        for (const record of hot) yield JSON.stringify({ r: record });
      }
      file.rewriteTexts(texts(this), (handle) => {
        if (placed < cold.length) this.cold.moved(cold[placed]!, handle);
        else this.hot.placed(hot[placed - cold.length]!.key, handle, true);
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
    const own = 'r' in entry;
    const key = own ? entry.r.key : entry.k;
    if (this.hot.placed(key, handle, own) || own) return;
    const seq = this.coldSeq(key);
    if (seq !== undefined) this.cold.placed(seq, handle);
  }

  /**
   * Moves the oldest hot records to the cold tier while there are more than MAP_HOT_RECORDS, each with
   * its lines' places (a record whose line beginLater() still keeps stays until flush()).
   */
  private evict(): void {
    if (!this.backed) return;
    while (this.hot.size > MAP_HOT_RECORDS) {
      const { record, lines } = this.hot.oldest()!;
      if (!lines) return;
      this.hot.forget(record);
      this.cold.add(record, lines);
    }
  }

  /**
   * A journal line applied (read at open, or made now): a whole record, or a copy of one. `handle`:
   * where the line is, when it is known (at open); a line written now is placed by placed().
   */
  private apply(entry: Entry, handle?: number): void {
    if ('r' in entry) {
      const old = this.hot.get(entry.r.key);
      if (old) this.hot.forget(old);
      else this.forgetCold(entry.r.key);
      const record = this.hot.add(entry.r, handle);
      this.ageDue = Math.min(this.ageDue, record.at + this.limits.maxAgeMs);
      return;
    }
    const record = this.hot.get(entry.k);
    if (record) {
      this.hot.addCopy(record, entry.e, entry.c, handle);
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


  private forgetCold(key: string): void {
    const seq = this.coldSeq(key);
    if (seq !== undefined) this.cold.forget(seq);
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
    // The cold records are the older ones: they go first, each read back once to unlink it, through one
    // reader (the oldest lie together in the file: a read per 64 KB, not an open and a read each).
    let done = false;
    const forgetCold = (readLine: (handle: number) => string): void => {
      for (let next = this.cold.oldest(); next; next = this.cold.oldest()) {
        if (next.at >= oldest && this.size <= keep) {
          this.ageDue = next.at + maxAgeMs;
          done = true;
          return;
        }
        aged ||= next.at < oldest;
        this.cold.forget(next.seq, readLine);
      }
    };
    if (this.cold.size > 0) {
      if (this.file) this.file.withLines(forgetCold);
      else forgetCold(this.readBeforeOpen);
    }
    if (done) return aged;
    for (const record of this.hot.values()) {
      if (record.at >= oldest && this.size <= keep) {
        this.ageDue = record.at + maxAgeMs;
        break;
      }
      aged ||= record.at < oldest;
      this.hot.forget(record);
    }
    return aged;
  }
}
