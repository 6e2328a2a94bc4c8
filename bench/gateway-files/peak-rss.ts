import { readFileSync, writeFileSync } from 'node:fs';

/**
 * A process's peak resident memory over a window, from /proc/<pid>/status: the window starts by
 * resetting the kernel's high-water mark (VmHWM) to the current RSS (`5` written to
 * /proc/<pid>/clear_refs, Linux 4.0+, allowed on one's own child), and VmRSS is also sampled every
 * few milliseconds; the peak is the larger of the two, so a busy bench process that samples late
 * still sees the kernel's figure. Where the reset is refused (another kernel, another owner) the
 * sampled peak alone is used, and `hwmReset` says so.
 */
export class PeakRss {
  readonly before: number;
  readonly hwmReset: boolean;
  private sampledPeak: number;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number, everyMs = 5) {
    let reset = true;
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch {
      reset = false;
    }
    this.hwmReset = reset;
    this.before = statusKb(pid, 'VmRSS') * 1024;
    this.sampledPeak = this.before;
    this.timer = setInterval(() => {
      this.sampledPeak = Math.max(this.sampledPeak, statusKb(this.pid, 'VmRSS') * 1024);
    }, everyMs);
  }

  /** Ends the window: the peak in bytes (the kernel's high-water mark, or the sampled peak when larger or the mark was not reset). */
  stop(): { before: number; peak: number; sampledPeak: number; hwm?: number } {
    clearInterval(this.timer);
    this.sampledPeak = Math.max(this.sampledPeak, statusKb(this.pid, 'VmRSS') * 1024);
    if (!this.hwmReset) return { before: this.before, peak: this.sampledPeak, sampledPeak: this.sampledPeak };
    const hwm = statusKb(this.pid, 'VmHWM') * 1024;
    return { before: this.before, peak: Math.max(hwm, this.sampledPeak), sampledPeak: this.sampledPeak, hwm };
  }
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no ${field} for process ${pid}`);
  return Number(match[1]);
}
