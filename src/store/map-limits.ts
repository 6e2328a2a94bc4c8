/** The message map's bounds (docs/gateways.md "The message map"). */

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
