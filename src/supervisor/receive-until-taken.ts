import { sleep } from '../chat/backoff.js';
import type { IncomingMessage } from '../gateway/message.js';
import type { GatewayPort } from '../pipeline/plugin.js';
import { PostFailedError } from './chat-outbox.js';

/**
 * For platform relays: hands one line to the gateways of `channel`, and when a chat will not take it
 * now (PostFailedError: closed, not joined yet) tries again every `retryMs` until it does, so that a
 * relay keeping its platform position after each line never passes one that was not taken. Any other
 * error, or the relay stopping, ends the wait with that error.
 */
export async function receiveUntilTaken(
  gateway: GatewayPort,
  channel: string,
  line: IncomingMessage,
  options: { stopping: AbortSignal; retryMs?: number; onRetry?: () => void },
): Promise<void> {
  for (;;) {
    try {
      await gateway.receive(channel, line);
      return;
    } catch (error) {
      if (!(error instanceof PostFailedError) || options.stopping.aborted) throw error;
      options.onRetry?.();
      await sleep(options.retryMs ?? 2_000, options.stopping);
    }
  }
}
