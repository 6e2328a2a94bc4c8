import { join } from 'node:path';
import { ChannelLog } from '../../plugins/http-api/stream-log.js';
import { IdempotencyKeys } from '../../plugins/http-api/idempotency.js';
import type { QueuedLine } from '../../plugins/relay-irc/channel-outbox.js';
import { SentKeys } from '../../plugins/relay-irc/sent-keys.js';
import { CursorStore } from '../../src/store/cursor-store.js';
import { DurableQueue } from '../../src/store/durable-queue.js';
import { DEFAULT_MAP_LIMITS, MessageMap } from '../../src/store/message-map.js';
import { OutboxFile } from '../../src/store/outbox-file.js';
import { BufferedFileStorage } from './buffered-storage.js';
import { textOf, writeLine } from './map-records.js';

export const MONTH_MS = 30 * 24 * 3600 * 1000;

export interface MonthPlan {
  /** `<state_dir>` of the bots.yaml the bench starts. */
  stateDir: string;
  bot: string;
  /** The IRC channel of relay-irc (its queue's file name) and the HTTP API's channel. */
  ircChannel: string;
  httpChannel: string;
  lines: number;
}

/**
 * The state a month at one line a second leaves (#32 part 4), written through the real store classes
 * at the paths `groupwire run` opens: every line goes through the gateway map (begin and two copies,
 * dated over 30 days by the map's clock), the bot's cursor and outbox (added, sent, done), relay-irc's
 * queue (pushed, then shifted once sent) and its sent keys, and the HTTP API's stream log; one line in
 * 20 came in through the HTTP API (its intake queue and idempotency keys). What each file holds at the
 * end is what its compaction left, as after a month of running.
 */
export function writeMonthOfState(plan: MonthPlan, progress: (done: number) => void = () => undefined): void {
  const botDir = join(plan.stateDir, 'bots', plan.bot);
  const start = Date.now() - MONTH_MS;
  const step = MONTH_MS / plan.lines;
  let now = start;
  const clock = () => now;
  const files = new BufferedFileStorage();
  const storage = files.storage;
  const map = MessageMap.open(join(plan.stateDir, 'gateway-map.jsonl'), DEFAULT_MAP_LIMITS, storage, clock);
  // The cursor store writes through a descriptor of its own with the file storage (one write(2) a move).
  const cursors = CursorStore.open(join(botDir, 'cursors.jsonl'));
  const outbox = OutboxFile.open(join(botDir, 'outbox.jsonl'), storage);
  const irc = join(botDir, 'plugins', 'relay-irc');
  const toIrc = DurableQueue.open<QueuedLine>(join(irc, `queue-${encodeURIComponent(plan.ircChannel)}.json`), { maxItems: 10_000, storage });
  const sentKeys = SentKeys.open(irc, storage);
  const http = join(botDir, 'plugins', 'http-api');
  const stream = ChannelLog.open(join(http, `stream-${plan.httpChannel}.json`), storage, 10_000);
  const intake = DurableQueue.open<{ id: string; channel: string; client: string; kind: 'message'; text: string; name: string }>(
    join(http, `intake-${plan.httpChannel}.json`), { maxItems: 10_000, storage });
  const idempotency = IdempotencyKeys.open(join(http, 'idempotency.json'), storage, 24 * 3600 * 1000);
  const chatId = 'month-chat';
  for (let i = 0; i < plan.lines; i += 1) {
    now = Math.floor(start + i * step);
    const record = writeLine(map, i);
    cursors.set(chatId, i + 1);
    const post = { id: `post-${i}`, chatId, text: `<nick> ${textOf(i)}`, state: 'queued' as const, relay: { key: record.key, bus: true, first: true }, queuedAt: now };
    outbox.add(post);
    outbox.changed(Object.assign(post, { state: 'sent' as const, sentAfter: i }));
    outbox.remove(post.id);
    toIrc.push({ src: `${chatId}:${i + 1}`, key: JSON.stringify([record.key, 'irc']), text: textOf(i) });
    toIrc.shift();
    sentKeys.add(sentKeys.idOf(chatId, plan.ircChannel, JSON.stringify([record.key, 'irc'])));
    stream.append({ id: `${i}`, gateway: 'general', channel: plan.httpChannel, kind: 'message', text: textOf(i), speaker: record.speaker, time: new Date(now).toISOString() });
    if (i % 20 === 0) {
      const id = `${String(Math.floor(now)).padStart(13, '0')}-000000`;
      intake.push({ id, channel: plan.httpChannel, client: 'bench', kind: 'message', text: textOf(i), name: 'bench' });
      intake.shift();
      idempotency.remember({ client: 'bench', key: `key-${i}`, at: now, status: 202, body: { id } });
    }
    if (i % 100_000 === 99_999) progress(i + 1);
  }
  cursors.close();
  files.flush();
}
