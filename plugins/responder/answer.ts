import type { ChatMessage, PluginContext } from '../../src/index.js';
import type { AnsweredMarks } from './answered.js';
import { splitMessage } from './split.js';

/**
 * Where an answer goes. `everywhere` (the default): into the chat, whence the gateway carries it to
 * every side, as any post of the bot. `origin`: only back where the command was said (the relay
 * endpoint of a line from IRC or Slack; for a chat member's message the same as `everywhere`).
 */
export type AnswerTo = 'everywhere' | 'origin';

/**
 * Posting the answer to one message: the message is marked answered (on disk) before anything is
 * queued, long texts are split, and the posts are awaited so a failure is logged against the message.
 */
export function answerer(ctx: PluginContext, marks: AnsweredMarks, maxLength: number, answerTo: AnswerTo = 'everywhere') {
  // An answer that goes back to IRC or Slack alone is no chat message: it resolves with undefined.
  const reply = (text: string): Promise<ChatMessage | undefined> => (answerTo === 'origin' ? ctx.reply(text, { only: 'origin' }) : ctx.reply(text));
  return {
    /**
     * Posts the texts (each split as needed). With `wait`, resolves with the stored chat messages
     * (none for an answer that went to the origin alone) and rejects when a post fails (a handler's
     * own reply()); else failures are logged and it resolves with nothing, at the latest when the
     * plugin's time is up (the posts still go out).
     */
    async post(texts: string[], wait = false): Promise<ChatMessage[]> {
      const parts = texts.flatMap((text) => splitMessage(text, maxLength));
      if (parts.length === 0) return [];
      try {
        await marks.mark(ctx.chat.id, ctx.message.msg_num);
      } catch (error) {
        ctx.log.warn({ err: error }, 'responder: could not save the answered mark');
      }
      // Every part is queued at once: the outbox keeps their order and writes them to disk before
      // reply() returns.
      const settled = Promise.all(parts.map((part) => reply(part)))
        .then((posted) => posted.filter((message): message is ChatMessage => message !== undefined));
      if (wait) return settled;
      try {
        await untilAborted(settled, ctx.signal);
      } catch (error) {
        ctx.log.warn({ err: error, msgNum: ctx.message.msg_num }, 'responder: an answer could not be posted');
      }
      return [];
    },
  };
}

/** The promise, or undefined once the signal aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
