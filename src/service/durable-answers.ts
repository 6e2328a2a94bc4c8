import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ApiError } from './errors.js';
import type { StateFile } from './state-file.js';

/**
 * With `--state FILE`, no answer leaves before the data it may show is on disk: an `onSend` hook
 * (every route: the API, files, admin, not-found and error answers) awaits the state file's save
 * whenever the data moved since the last durable save. So what a caller was told is done survives a
 * `kill -9` or a power cut, and an answer never shows data a crash could take back. Answers with
 * nothing new to save pass at once; many answers waiting together share one save (state-file.ts).
 *
 * If the save fails (disk full, permissions), the answer becomes the error object `server`: the
 * change is in memory and the timer keeps trying, but the service does not claim what it cannot keep.
 */
export function answerOnlyWhenSaved(app: FastifyInstance, state: StateFile, log: Logger): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    if (!state.behind) return payload;
    try {
      await state.persist();
      return payload;
    } catch {
      // state-file.ts logged the cause; this says which answer it cost.
      log.warn({ url: _request.routeOptions.url, status: reply.statusCode }, 'answer replaced by an error: the data could not be saved');
      if (payload instanceof Readable) payload.destroy();
      reply.code(400);
      reply.removeHeader('content-disposition');
      reply.header('content-type', 'application/json; charset=utf-8');
      return JSON.stringify(new ApiError('server', 'the service could not save this change; try again later').toBody());
    }
  });
}
