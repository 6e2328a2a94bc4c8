import { JsonLinesFile } from './json-lines-file.js';
import { FILE_STORAGE, type Journal, type Storage } from './storage.js';

/** One copy of a relayed line: its native id on one endpoint, and what it was there. */
export interface MapCopy {
  id: string;
  /** The chat is the gateway's bus for the line (its relays send it on from there). */
  bus?: boolean;
  /** The bot hears the line first in this chat (its plugins answer it there). */
  first?: boolean;
}

/** A line that went through a gateway: where it was said, and its copies elsewhere. */
export interface MapRecord {
  /** `<origin endpoint> <native id>` (and for edits `~edit~<revision>`, deletions `~delete`). */
  key: string;
  gateway: string;
  origin: string;
  platform: string;
  nativeId: string;
  kind: string;
  speaker: { platform: string; id: string; name: string; email?: string };
  /** The line as said, cut to a snippet (for quotes) unless it is needed whole to post again. */
  text: string;
  /** The native id (at the origin) it answers, or of the message an edit or deletion changes. */
  replyTo?: string;
  /** The line names what it answers (IncomingMessage.namesParent): no quote of the parent goes before it. */
  namesParent?: true;
  at: number;
  copies: Record<string, MapCopy>;
}

type Entry = { r: MapRecord } | { k: string; e: string; c: MapCopy };

export interface MessageMapLimits {
  /** Records kept at most; the oldest go first. */
  maxRecords: number;
  /** Records older than this are forgotten (ms). */
  maxAgeMs: number;
}

export const DEFAULT_MAP_LIMITS: MessageMapLimits = { maxRecords: 100_000, maxAgeMs: 30 * 24 * 3600 * 1000 };

/**
 * The gateways' message map: (endpoint, native id) ⇄ (endpoint, native id) for every relayed line, on
 * disk (an append-only journal, compacted now and then), bounded by count and age. It says where a line
 * came from when the bot's own post of it comes back (`ctx.own.relayed`), keeps a line taken twice
 * (a retry after a crash) from being posted twice, and finds what a thread reply, an edit or a
 * deletion refers to on each side.
 */
export class MessageMap {
  private readonly records = new Map<string, MapRecord>();
  /** `<endpoint> <native id>` of every copy and origin → record key. */
  private readonly index = new Map<string, string>();
  /** `<origin> <native id>` of an edited message → the key of its newest edit. */
  private readonly edits = new Map<string, string>();
  private readonly file: Journal | undefined;

  private constructor(path: string | undefined, entries: Entry[], private readonly limits: MessageMapLimits, storage: Storage) {
    for (const entry of entries) this.apply(entry);
    this.trim();
    this.file = path === undefined ? undefined : storage.journal(path, this.snapshot());
  }

  static open(path: string, limits: MessageMapLimits = DEFAULT_MAP_LIMITS, storage: Storage = FILE_STORAGE): MessageMap {
    const entries = JsonLinesFile.parse(storage.readText(path), path, 'message map entry') as Entry[];
    return new MessageMap(path, entries, limits, storage);
  }

  static memory(limits: MessageMapLimits = DEFAULT_MAP_LIMITS): MessageMap {
    return new MessageMap(undefined, [], limits, FILE_STORAGE);
  }

  get size(): number {
    return this.records.size;
  }

  get(key: string): MapRecord | undefined {
    return this.records.get(key);
  }

  /** The record of a line by its native id on an endpoint (where it was said, or a copy of it). */
  find(endpoint: string, nativeId: string): MapRecord | undefined {
    const key = this.index.get(`${endpoint} ${nativeId}`);
    return key === undefined ? undefined : this.records.get(key);
  }

  /** The newest edit known of the message `nativeId` said on `endpoint` (what a deletion notice quotes). */
  latestEdit(endpoint: string, nativeId: string): MapRecord | undefined {
    const key = this.edits.get(`${endpoint} ${nativeId}`);
    return key === undefined ? undefined : this.records.get(key);
  }

  /** Adds a line's record, unless it is known: the record kept is returned. */
  begin(record: Omit<MapRecord, 'copies' | 'at'>): MapRecord {
    const known = this.records.get(record.key);
    if (known) return known;
    const full: MapRecord = { ...record, at: Date.now(), copies: {} };
    this.write({ r: full });
    return full;
  }

  /** A copy of line `key` now exists on `endpoint` (a chat message id, a Slack ts). */
  addCopy(key: string, endpoint: string, copy: MapCopy): void {
    const record = this.records.get(key);
    if (!record || record.copies[endpoint]?.id === copy.id) return;
    this.write({ k: key, e: endpoint, c: copy });
  }

  private write(entry: Entry): void {
    this.apply(entry);
    this.file?.append(entry);
    if (this.records.size > this.limits.maxRecords * 1.1 || (this.file && this.file.lines > 4 * this.records.size + 10_000)) {
      this.trim();
      this.file?.rewrite(this.snapshot());
    }
  }

  private apply(entry: Entry): void {
    if ('r' in entry) {
      const record = { ...entry.r, copies: { ...entry.r.copies } };
      this.records.set(record.key, record);
      // An edit or deletion names the message it changes: the index keeps pointing at that message.
      if (record.kind !== 'edit' && record.kind !== 'delete') this.index.set(`${record.origin} ${record.nativeId}`, record.key);
      if (record.kind === 'edit') this.edits.set(`${record.origin} ${record.nativeId}`, record.key);
      for (const [endpoint, copy] of Object.entries(record.copies)) this.index.set(`${baseOf(endpoint)} ${copy.id}`, record.key);
      return;
    }
    const record = this.records.get(entry.k);
    if (!record) return;
    record.copies[entry.e] = entry.c;
    this.index.set(`${baseOf(entry.e)} ${entry.c.id}`, entry.k);
  }

  /** Forgets records past the age or count limit, oldest first (a Map keeps insertion order). */
  private trim(): void {
    const oldest = Date.now() - this.limits.maxAgeMs;
    for (const record of this.records.values()) {
      if (record.at >= oldest && this.records.size <= this.limits.maxRecords) break;
      this.records.delete(record.key);
      if (this.index.get(`${record.origin} ${record.nativeId}`) === record.key) this.index.delete(`${record.origin} ${record.nativeId}`);
      if (this.edits.get(`${record.origin} ${record.nativeId}`) === record.key) this.edits.delete(`${record.origin} ${record.nativeId}`);
      for (const [endpoint, copy] of Object.entries(record.copies)) this.index.delete(`${baseOf(endpoint)} ${copy.id}`);
    }
  }

  private snapshot(): Entry[] {
    return [...this.records.values()].map((record) => ({ r: record }));
  }
}

/** A copy of a later part of a long line is kept as `<endpoint>#<part>`, and found by the endpoint itself. */
function baseOf(endpoint: string): string {
  const hash = endpoint.lastIndexOf('#');
  return hash > 0 && /^\d+$/.test(endpoint.slice(hash + 1)) ? endpoint.slice(0, hash) : endpoint;
}
