import { Readable } from 'node:stream';
import { GroupsError, OPERATIONS, ResponseFormatError, type GroupsClient, type OperationName } from '../api/index.js';
import type { RawResponse, WireParams } from '../api/transport.js';
import { parseJsonLossless } from './output.js';

/**
 * Calls an operation and answers its JSON parsed losslessly (every number keeps its text, so ids
 * print exactly as sent), or undefined for an empty 200. It goes through the client's `run()`, so
 * retries, re-login and csrf refresh apply; error answers become the client's error classes.
 */
export async function callRaw(client: GroupsClient, operation: OperationName, params: WireParams): Promise<unknown> {
  try {
    return await callRawOnce(client, operation, params);
  } catch (error) {
    // The parameters let the error say what was not found (`group "demo" was not found`).
    if (error instanceof GroupsError) error.withContext({ params });
    throw error;
  }
}

async function callRawOnce(client: GroupsClient, operation: OperationName, params: WireParams): Promise<unknown> {
  const method = OPERATIONS[operation];
  return client.run(operation, method, async () => {
    const wire: WireParams = { ...params };
    if (method === 'POST' && wire.csrf === undefined) wire.csrf = await client.csrf();
    const response = await client.transport.send(operation, method, wire, client.authHeaders());
    const text = await response.body.text();
    if (response.status === 200) {
      if (text === '') return undefined;
      const value = tryParse(text);
      if (value !== NOT_JSON && !isErrorObject(value)) return value;
    }
    // Not a result: let the client's own reading throw the matching error class.
    await client.transport.readJson(operation, withText(response, text));
    throw new ResponseFormatError(operation, response.status, String(response.headers['content-type'] ?? ''), text.slice(0, 200));
  });
}

interface RawList {
  object: 'list';
  has_more?: unknown;
  next_page_token?: unknown;
  data?: unknown[] | null;
}

/** Every item of a list operation, page after page, each page's `next_page_token` sent back as its exact text. */
export async function callRawAll(client: GroupsClient, operation: OperationName, params: WireParams): Promise<unknown[]> {
  const items: unknown[] = [];
  let token: string | undefined;
  for (;;) {
    const page = await callRaw(client, operation, token === undefined ? params : { ...params, page_token: token });
    if (!isList(page)) throw new ResponseFormatError(operation, 200, 'application/json', 'expected a list object');
    items.push(...(page.data ?? []));
    if (page.has_more !== true) return items;
    const next = page.next_page_token === undefined || page.next_page_token === null ? '' : String(page.next_page_token);
    // A list that says it has more but gives no new place to continue would loop forever.
    if (next === '' || next === '0' || next === token) {
      throw new ResponseFormatError(operation, 200, 'application/json', `has_more without a usable next_page_token (${next})`);
    }
    token = next;
  }
}

export function isList(value: unknown): value is RawList {
  return typeof value === 'object' && value !== null && (value as { object?: unknown }).object === 'list';
}

const NOT_JSON = Symbol('not JSON');

function tryParse(text: string): unknown {
  try {
    return parseJsonLossless(text);
  } catch {
    return NOT_JSON;
  }
}

function isErrorObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && (value as { object?: unknown }).object === 'error';
}

/** The response again, its body already read: readJson() reads `text` instead. */
function withText(response: RawResponse, text: string): RawResponse {
  return { ...response, body: Object.assign(Readable.from([]), { text: async () => text }) };
}
