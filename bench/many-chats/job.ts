import { fork } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** What the bench hands a measuring child process (its first IPC message). */
export interface SocketJob {
  chats: number;
  baseUrl: string;
  ca: string;
  caFile: string;
  adminToken: string;
  group: string;
  /** The service's upgrade limit for this run: the baseline paces itself by it, bots.yaml states it. */
  upgrades: { perSecond: number; burst: number };
  /** A phase that takes longer is cut off and reported as not finished. */
  phaseTimeoutMs: number;
  /** Baseline only: a token of the bot user and its csrf, and every chat_sub id to open. */
  token?: string;
  csrf?: string;
  chatsubIds?: string[];
  /** groupwire only: the bot's login, a temp dir for bots.yaml, state and the log, and the tsc build to run. */
  login?: { email: string; password: string };
  dir?: string;
  build?: string;
}

export interface GateState {
  accepted: number;
  refused: number;
  cuts: number;
  pace: number;
}

/** What the service counted during one phase (differences of /_admin/stats). */
export interface ServiceCounts {
  refusedUpgrades: number;
  acceptedUpgrades: number;
  apiCalls: number;
  historyCalls: number;
  chatListCalls: number;
}

export interface Phase {
  /** Time until every socket was open; undefined when the phase was cut off. */
  ms: number | undefined;
  /** Sockets open when the phase ended (all of them unless it was cut off). */
  open: number;
  service: ServiceCounts;
}

export interface SocketResult {
  open: Phase;
  reopen: Phase | undefined;
  rssBytesPerSocket: number | undefined;
  /** Of that, the JS heap and what V8 counts outside it (Buffers), per socket: the rest is native (TLS, sockets). */
  heapBytesPerSocket?: { heap: number; external: number };
  /** Open sockets of the process when memory was read (chat sockets plus REST connections). */
  socketFds?: number;
  /** groupwire: until every chat's first start had its position (taken from the history frames the socket sends). */
  caughtUpMs?: number;
  /** groupwire: the REST calls of the whole first start, from the start until every chat had its position (or the cut-off). */
  firstStart?: ServiceCounts;
  /** groupwire: the REST calls of the catch-ups that followed the reopen (none are needed). */
  afterReopen?: ServiceCounts;
  logLines?: number;
  /** groupwire: the upgrade gate's counts (accepted, refused, cuts) and pace after each phase. */
  gate?: { afterOpen: GateState; afterReopen: GateState | undefined };
  /** Baseline: chat_message frames received (the history sent on connect). */
  frames?: number;
  /** groupwire: what the operations endpoint costs with every chat open (medians of 5, ms; sizes in bytes). */
  ops?: OpsCost;
}

export interface OpsCost {
  /** A /metrics scrape (the exposition text built). */
  scrapeMs: number;
  scrapeBytes: number;
  /** The status snapshot as JSON (what /status.json and each /status/events push send). */
  snapshotMs: number;
  snapshotBytes: number;
  /** The baseline: the supervisor's stats() as JSON, what there was before the endpoint. */
  statsMs: number;
  statsBytes: number;
}

export function diffCounts(before: any, after: any): ServiceCounts {
  const calls = (stats: any) => Object.values(stats.api_calls ?? {}).reduce((sum: number, n) => sum + Number(n), 0);
  return {
    refusedUpgrades: after.rate_limited.upgrades - before.rate_limited.upgrades,
    acceptedUpgrades: after.sockets.accepted - before.sockets.accepted,
    apiCalls: calls(after) - calls(before),
    historyCalls: (after.api_calls?.getchathistory ?? 0) - (before.api_calls?.getchathistory ?? 0),
    chatListCalls: (after.api_calls?.getchats ?? 0) - (before.api_calls?.getchats ?? 0),
  };
}

/** Polls `done` until it holds; answers the ms it took, or undefined past the deadline. */
export async function timeUntil(done: () => boolean, started: number, timeoutMs: number, pollMs = 20): Promise<number | undefined> {
  while (!done()) {
    if (performance.now() - started > timeoutMs) return undefined;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  return performance.now() - started;
}

/** Runs one of this folder's measuring scripts in a fresh node (its own heap: a clean RSS figure). */
export function runChild(script: string, job: SocketJob): Promise<SocketResult> {
  const child = fork(fileURLToPath(new URL(script, import.meta.url)), [], {
    execArgv: ['--expose-gc', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.send(job);
  return new Promise((resolve, reject) => {
    let result: SocketResult | undefined;
    child.on('message', (message) => {
      result = message as SocketResult;
    });
    child.once('exit', (code, signal) => {
      if (result) resolve(result);
      else reject(new Error(`${script} ended (${code ?? signal}) without a result`));
    });
  });
}

/** In a measuring child: the job the bench sent. */
export function receiveJob(): Promise<SocketJob> {
  return new Promise((resolve) => process.once('message', (job) => resolve(job as SocketJob)));
}

/** In a measuring child: hands the result back and lets the process end. */
export function sendResult(result: SocketResult): void {
  process.send!(result, () => process.disconnect());
}

/** The growth of the JS heap and of external memory since `before`, per socket. */
export function heapPerSocket(before: NodeJS.MemoryUsage, sockets: number): { heap: number; external: number } {
  const now = process.memoryUsage();
  return { heap: (now.heapUsed - before.heapUsed) / sockets, external: (now.external - before.external) / sockets };
}

/** How many sockets this process holds open (file descriptors that are sockets). */
export function socketFds(): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')) count += 1;
    } catch {
      // closed meanwhile
    }
  }
  return count;
}
