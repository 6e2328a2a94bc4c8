import { STATUS_CODES } from 'node:http';
import type { Readable } from 'node:stream';
import type { ResponseLike } from '@discordjs/rest';
import { Headers, request, type Dispatcher } from 'undici';

/**
 * How the REST client makes its HTTP requests (REST's `makeRequest`): undici's `request`, as the
 * library's own default does, but a body is passed on as it is. The default reads an iterable body
 * whole into memory first; a post's files are an iterable that reads them from disk as they are sent
 * (files-out.ts), so they are streamed, with backpressure. Strings (JSON) and no body work as before.
 */
export async function makeRequest(url: string, init: RequestInit & { dispatcher?: Dispatcher }): Promise<ResponseLike> {
  const answer = await request(url, {
    method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
    headers: init.headers as Record<string, string>,
    // An async iterable is sent as undici sends any (its typings name only Readable).
    body: init.body as unknown as string | Readable | null,
    signal: init.signal ?? undefined,
    ...(init.dispatcher ? { dispatcher: init.dispatcher } : {}),
  });
  return {
    body: answer.body,
    arrayBuffer: () => answer.body.arrayBuffer(),
    json: () => answer.body.json(),
    text: () => answer.body.text(),
    get bodyUsed() {
      return answer.body.bodyUsed;
    },
    headers: new Headers(answer.headers as Record<string, string>),
    status: answer.statusCode,
    statusText: STATUS_CODES[answer.statusCode] ?? '',
    ok: answer.statusCode >= 200 && answer.statusCode < 300,
  } as unknown as ResponseLike;
}
