import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { request } from 'undici';
import { rssBytes } from './memory.js';

/**
 * What a long-running bench reads of a groupwire process from outside, as an operator could: its
 * resident memory and open file descriptors from /proc, its heap and event-loop lag from its
 * operations endpoint's /metrics (prom-client's defaults), and the sizes of the files it keeps.
 */

/** Open file descriptors of a process (the entries of /proc/<pid>/fd). */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/**
 * Bytes a process has had written to storage so far (write_bytes of /proc/<pid>/io: counted as it
 * dirties the page cache, so a file rewritten whole on every change shows here in full, sockets not).
 */
export function diskWrittenBytes(pid: number): number {
  const match = /^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
  return match ? Number(match[1]) : Number.NaN;
}

/** Every file under `dir` (recursively) by its path relative to `dir`, with its size in bytes. */
export function fileSizes(dir: string): Map<string, number> {
  const sizes = new Map<string, number>();
  const walk = (folder: string) => {
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return; // not made yet, or removed while we looked
    }
    for (const entry of entries) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) {
        try {
          sizes.set(relative(dir, path), statSync(path).size);
        } catch {
          // replaced (written to a temp file and renamed) between the listing and the stat
        }
      }
    }
  };
  walk(dir);
  return sizes;
}

export function totalBytes(sizes: ReadonlyMap<string, number>): number {
  let sum = 0;
  for (const size of sizes.values()) sum += size;
  return sum;
}

/** One series of a Prometheus text exposition: its name, its labels as written, its value. */
export interface Series {
  name: string;
  labels: string;
  value: number;
}

/** The series of a Prometheus text exposition (comments skipped; label values are not unescaped). */
export function parseMetrics(text: string): Series[] {
  const series: Series[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const key = line.slice(0, space);
    const brace = key.indexOf('{');
    series.push({ name: brace < 0 ? key : key.slice(0, brace), labels: brace < 0 ? '' : key.slice(brace), value: Number(line.slice(space + 1)) });
  }
  return series;
}

/** The sum of a metric's series (NaN when it has none). */
export function metricSum(series: readonly Series[], name: string, labelsContain = ''): number {
  const matching = series.filter((s) => s.name === name && s.labels.includes(labelsContain));
  return matching.length === 0 ? Number.NaN : matching.reduce((sum, s) => sum + s.value, 0);
}

/** GET <url>: the body and how long the whole answer took; undefined body when it failed or took longer than `timeoutMs`. */
export async function timedGet(url: string, timeoutMs: number): Promise<{ ms: number; body?: string; status?: number }> {
  const start = performance.now();
  try {
    const answer = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs) });
    const body = await answer.body.text();
    return { ms: performance.now() - start, body, status: answer.statusCode };
  } catch {
    return { ms: performance.now() - start };
  }
}

/** One reading of a groupwire process. Figures a failed /metrics scrape could not give are NaN. */
export interface ProcessSample {
  /** performance.now() when taken. */
  at: number;
  rssMB: number;
  fds: number;
  /** Written to storage since the process started (MB). */
  diskWrittenMB: number;
  heapUsedMB: number;
  heapTotalMB: number;
  /** prom-client's event-loop delay p99 and max since the previous scrape (its histogram is reset on each). */
  lagP99Ms: number;
  lagMaxMs: number;
  /** How long the /metrics answer took (the timeout when it gave none). */
  scrapeMs: number;
  scrapeFailed: boolean;
  /** The bot's posts waiting to go into the chat, and the relays' queues (by queue), from /metrics. */
  outboxDepth: number;
  queueDepths: Record<string, number>;
  /** Every file under the state dir and the transcript dir, with its size. */
  stateFiles: Map<string, number>;
  transcriptFiles: Map<string, number>;
}

const QUEUE = /queue="([^"]*)"/;

export async function sampleProcess(pid: number, opsUrl: string, stateDir: string, transcriptDir: string, timeoutMs = 30_000): Promise<ProcessSample> {
  const at = performance.now();
  const rssMB = rssBytes(pid) / 1048576;
  const fds = openFds(pid);
  const diskWrittenMB = diskWrittenBytes(pid) / 1048576;
  const scrape = await timedGet(`${opsUrl}/metrics`, timeoutMs);
  const series = scrape.status === 200 && scrape.body !== undefined ? parseMetrics(scrape.body) : [];
  const queueDepths: Record<string, number> = {};
  for (const s of series) {
    if (s.name !== 'groupwire_plugin_queue_depth') continue;
    const queue = QUEUE.exec(s.labels)?.[1] ?? '?';
    queueDepths[queue] = (queueDepths[queue] ?? 0) + s.value;
  }
  return {
    at, rssMB, fds, diskWrittenMB,
    heapUsedMB: metricSum(series, 'nodejs_heap_size_used_bytes') / 1048576,
    heapTotalMB: metricSum(series, 'nodejs_heap_size_total_bytes') / 1048576,
    lagP99Ms: metricSum(series, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    lagMaxMs: metricSum(series, 'nodejs_eventloop_lag_max_seconds') * 1000,
    scrapeMs: scrape.ms,
    scrapeFailed: series.length === 0,
    outboxDepth: metricSum(series, 'groupwire_chat_outbox_depth'),
    queueDepths,
    stateFiles: fileSizes(stateDir),
    transcriptFiles: fileSizes(transcriptDir),
  };
}
