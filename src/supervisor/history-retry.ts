import type { Logger } from 'pino';
import { sleep } from '../chat/backoff.js';

/** The pause after the first failed read; it doubles up to HISTORY_RETRY_MAX_MS. */
const HISTORY_RETRY_MIN_MS = 250;
const HISTORY_RETRY_MAX_MS = 15_000;

/**
 * Reads until a read succeeds, pausing longer after each failure, while `current()` says the caller
 * still wants it (a newer socket opened, the bot stopped: it gives up and answers false). The outbox
 * needs this after a reconnect: it may send again only what a successful read of the history proved
 * missing, and an unreadable history proves nothing (taking it as "not stored" posted every post in
 * flight twice: the chaos run's 70 doubled Slack lines after a socket drop while the service was slow).
 */
export async function readUntilDone(read: () => Promise<boolean>, current: () => boolean, log: Logger): Promise<boolean> {
  for (let attempt = 0; ; attempt += 1) {
    if (!current()) return false;
    if (await read()) return current();
    const waitMs = Math.min(HISTORY_RETRY_MAX_MS, HISTORY_RETRY_MIN_MS * 2 ** Math.min(attempt, 16));
    if (attempt === 0) log.warn({ retryInMs: waitMs }, 'could not read the chat\'s history to see which posts the old socket delivered; nothing is sent again until it can be read');
    await sleep(waitMs);
  }
}
