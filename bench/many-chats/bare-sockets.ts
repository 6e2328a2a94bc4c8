import { createSecureContext } from 'node:tls';
import WebSocket from 'ws';
import { rssBytes, settle } from '../lib/memory.js';
import { adminClient } from '../lib/service-process.js';
import { diffCounts, heapPerSocket, receiveJob, socketFds, sendResult, timeUntil, type Phase } from './job.js';

/**
 * The baseline: bare `ws` clients opening the same chat sockets as the bot, paced by a token bucket
 * at the service's own upgrade limit (as fast as it allows), a refused upgrade tried again after its
 * Retry-After, a dropped socket opened again at once. Nothing else: no REST, no state, no logging.
 */
const job = await receiveJob();
const service = adminClient(job);
const ids = job.chatsubIds!;
const secureContext = createSecureContext({ ca: job.ca });
const url = (chatsubId: string) =>
  `${job.baseUrl.replace(/^https:/, 'wss:')}/api/v1/chatdata?${new URLSearchParams({ chatsub_id: chatsubId, csrf: job.csrf! })}`;

const sockets: Array<WebSocket | undefined> = new Array(ids.length);
const opens = new Array<number>(ids.length).fill(0);
let openNow = 0;
let frames = 0;

/** Token bucket at the service's rate: the indices waiting for an upgrade go out as tokens come. */
const waiting: number[] = [];
let tokens = job.upgrades.burst;
let refilled = performance.now();
let pacer: NodeJS.Timeout | undefined;
function enqueue(index: number, afterMs = 0): void {
  if (afterMs > 0) {
    setTimeout(() => enqueue(index), afterMs);
    return;
  }
  waiting.push(index);
  pace();
}
function pace(): void {
  if (pacer) return;
  const now = performance.now();
  tokens = Math.min(job.upgrades.burst, tokens + ((now - refilled) / 1000) * job.upgrades.perSecond);
  refilled = now;
  while (tokens >= 1 && waiting.length > 0) {
    tokens -= 1;
    open(waiting.shift()!);
  }
  if (waiting.length > 0) {
    pacer = setTimeout(() => {
      pacer = undefined;
      pace();
    }, Math.max(1, ((1 - tokens) / job.upgrades.perSecond) * 1000));
  }
}

function open(index: number): void {
  // ws hands its options to tls.connect, which takes a ready secureContext (ws's types do not list it).
  const ws = new WebSocket(url(ids[index]!), {
    headers: { authorization: `Bearer ${job.token}` }, perMessageDeflate: false, handshakeTimeout: 15_000, ...({ secureContext } as WebSocket.ClientOptions),
  });
  let refusedFor: number | undefined;
  ws.on('unexpected-response', (request, response) => {
    const retryAfter = Number(response.headers['retry-after'] ?? 1);
    refusedFor = response.statusCode === 429 ? retryAfter * 1000 : 1000;
    // terminate(), not request.destroy(): only ws's own abort ends in a 'close' event.
    ws.terminate();
  });
  ws.on('error', () => undefined);
  ws.on('open', () => {
    sockets[index] = ws;
    opens[index]! += 1;
    openNow += 1;
  });
  ws.on('message', () => {
    frames += 1;
  });
  ws.on('close', () => {
    if (sockets[index] === ws) {
      sockets[index] = undefined;
      openNow -= 1;
      if (!stopping) enqueue(index);
    } else if (!stopping) enqueue(index, refusedFor ?? 1000);
  });
}

let stopping = false;
await settle();
const rssBefore = rssBytes();
const heapBefore = process.memoryUsage();
const statsBefore = await service.stats();
const startedAt = performance.now();
if (process.env.MANY_CHATS_DEBUG) setInterval(() => process.stderr.write(`bare: ${openNow} open, ${waiting.length} waiting, t=${((performance.now() - startedAt) / 1000).toFixed(1)}\n`), 1000).unref();
ids.forEach((_, index) => enqueue(index));
const openMs = await timeUntil(() => openNow === ids.length, startedAt, job.phaseTimeoutMs);
const statsOpen = await service.stats();
const openPhase: Phase = { ms: openMs, open: openNow, service: diffCounts(statsBefore, statsOpen) };

let rssBytesPerSocket: number | undefined;
let heapBytesPerSocket: { heap: number; external: number } | undefined;
let fds: number | undefined;
let reopen: Phase | undefined;
if (openMs !== undefined) {
  await settle();
  rssBytesPerSocket = (rssBytes() - rssBefore) / ids.length;
  fds = socketFds();
  heapBytesPerSocket = heapPerSocket(heapBefore, ids.length);
  const dropAt = performance.now();
  await service.admin('faults/drop-sockets', {});
  const reopenMs = await timeUntil(() => openNow === ids.length && opens.every((n) => n >= 2), dropAt, job.phaseTimeoutMs);
  reopen = { ms: reopenMs, open: openNow, service: diffCounts(statsOpen, await service.stats()) };
}

stopping = true;
for (const ws of sockets) ws?.terminate();
clearTimeout(pacer);
await service.close();
sendResult({ open: openPhase, reopen, rssBytesPerSocket, heapBytesPerSocket, socketFds: fds, frames });
