import type { MapCopy, MapRecord } from './map-record.js';

/**
 * The message map's lookups, holding the records themselves: `<endpoint>` → `<native id>` → record.
 * No key string of its own per entry (a `${endpoint} ${id}` key cost a string of ~80 bytes for every
 * copy of every line): the endpoint maps are few, and the ids are the records' own strings.
 */
export class NativeIdIndex {
  private readonly byEndpoint = new Map<string, Map<string, MapRecord>>();

  get(endpoint: string, nativeId: string): MapRecord | undefined {
    return this.byEndpoint.get(endpoint)?.get(nativeId);
  }

  set(endpoint: string, nativeId: string, record: MapRecord): void {
    let ids = this.byEndpoint.get(endpoint);
    if (!ids) this.byEndpoint.set(endpoint, (ids = new Map()));
    ids.set(nativeId, record);
  }

  /** Forgets the entry when it still names this record (a later record may have taken the id). */
  delete(endpoint: string, nativeId: string, record: MapRecord): void {
    const ids = this.byEndpoint.get(endpoint);
    if (ids?.get(nativeId) !== record) return;
    ids.delete(nativeId);
    if (ids.size === 0) this.byEndpoint.delete(endpoint);
  }
}

/** Distinct values kept at most by a Shared table before it starts afresh (bounded whatever the speakers). */
const SHARED_MAX = 4096;

/**
 * One object or string for equal values, so 20,000 records of 40 speakers hold 40 speaker objects,
 * and the endpoint and gateway names read from the file are one string each, not one per record.
 * Bounded: past SHARED_MAX values the table starts afresh (what was shared stays shared).
 */
export class Shared<T> {
  private readonly values = new Map<string, T>();

  of(key: string, make: () => T): T {
    const known = this.values.get(key);
    if (known !== undefined) return known;
    if (this.values.size >= SHARED_MAX) this.values.clear();
    const value = make();
    this.values.set(key, value);
    return value;
  }
}

/** A copy with only the flags that are set (`bus: false` and no `bus` read the same everywhere). */
export function compactCopy(copy: MapCopy, id: string): MapCopy {
  if (copy.bus === true && copy.first === true) return { id, bus: true, first: true };
  if (copy.bus === true) return { id, bus: true };
  if (copy.first === true) return { id, first: true };
  return { id };
}

/** A copy of a later part of a long line is kept as `<endpoint>#<part>`, and found by the endpoint itself. */
export function baseOf(endpoint: string): string {
  const hash = endpoint.lastIndexOf('#');
  if (hash <= 0 || hash === endpoint.length - 1) return endpoint;
  for (let i = hash + 1; i < endpoint.length; i += 1) {
    const code = endpoint.charCodeAt(i);
    if (code < 48 || code > 57) return endpoint;
  }
  return endpoint.slice(0, hash);
}
