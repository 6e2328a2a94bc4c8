import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageMap } from '../../src/store/message-map.js';
import { writeLine } from './map-records.js';

/**
 * Heap used after a full collection (the process runs with --expose-gc), and the memory of typed
 * arrays, outside the heap (the cold records' places and lookups).
 */
function heapUsed(): number {
  for (let i = 0; i < 3; i += 1) globalThis.gc?.();
  const { heapUsed: used, arrayBuffers } = process.memoryUsage();
  return used + arrayBuffers;
}

export interface MapMemory {
  records: number;
  /** Bytes of heap (and typed arrays) per record: a map written line by line, as a running bot holds it. */
  writtenBytesPerRecord: number;
  /** The same map opened from its file, as a restarted bot holds it. */
  openedBytesPerRecord: number;
  fileBytesPerRecord: number;
}

/**
 * The message map's heap per record at `records` records (the default limit, 20,000): the heap with
 * the map less the heap without it, after full collections.
 */
export function measureMapMemory(records = 20_000): MapMemory {
  if (!globalThis.gc) throw new Error('run with node --expose-gc');
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-map-memory-'));
  try {
    const path = join(dir, 'gateway-map.jsonl');
    const limits = { maxRecords: records, maxAgeMs: 30 * 24 * 3600 * 1000 };
    let before = heapUsed();
    let map: MessageMap | undefined = MessageMap.open(path, limits);
    for (let i = 0; i < records; i += 1) writeLine(map, i);
    const written = (heapUsed() - before) / records;
    if (map.size !== records) throw new Error(`the map holds ${map.size} records, not ${records}`);
    map = undefined;
    before = heapUsed();
    map = MessageMap.open(path, limits);
    const opened = (heapUsed() - before) / records;
    if (map.size !== records) throw new Error(`the map opened with ${map.size} records, not ${records}`);
    return { records, writtenBytesPerRecord: written, openedBytesPerRecord: opened, fileBytesPerRecord: statSync(path).size / records };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(measureMapMemory(Number(process.env.MAP_RECORDS ?? 20_000)))}\n`);
}
