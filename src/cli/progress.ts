/** Where a progress line goes: a terminal (process.stderr), or anything shaped like one in tests. */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export interface Progress {
  update(bytes: number, total?: number): void;
  /** Clears the line (the caller prints its own summary). */
  done(): void;
}

const SPINNER = ['|', '/', '-', '\\'];
const NO_PROGRESS: Progress = { update() {}, done() {} };

/** 1536 -> "1.5 KiB". */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** One progress line: a bar with the percentage when the total is known, else a spinner and the bytes. */
export function renderProgress(label: string, bytes: number, total: number | undefined, frame: number, width = 80): string {
  if (total && total > 0) {
    const fraction = Math.min(1, bytes / total);
    const barWidth = Math.max(10, Math.min(30, width - label.length - 40));
    const filled = Math.round(fraction * barWidth);
    const bar = `${'#'.repeat(filled)}${'-'.repeat(barWidth - filled)}`;
    return `${label} [${bar}] ${String(Math.floor(fraction * 100)).padStart(3)}% ${formatBytes(bytes)} of ${formatBytes(total)}`;
  }
  return `${label} ${SPINNER[frame % SPINNER.length]} ${formatBytes(bytes)}`;
}

/**
 * A progress line on a terminal, redrawn at most every `intervalMs`; nothing at all when the stream is
 * not a TTY (so logs and pipes stay clean).
 */
export function createProgress(label: string, stream: ProgressStream = process.stderr, intervalMs = 100): Progress {
  if (!stream.isTTY) return NO_PROGRESS;
  let frame = 0;
  let lastDraw = -Infinity;
  let drawn = false;
  const draw = (bytes: number, total: number | undefined) => {
    const width = stream.columns || 80;
    const line = renderProgress(label, bytes, total, frame, width).slice(0, Math.max(1, width - 1));
    stream.write(`\r\x1b[K${line}`);
    frame += 1;
    drawn = true;
  };
  return {
    update(bytes, total) {
      const now = Date.now();
      if (now - lastDraw < intervalMs) return;
      lastDraw = now;
      draw(bytes, total);
    },
    done() {
      if (drawn) stream.write('\r\x1b[K');
      drawn = false;
    },
  };
}
