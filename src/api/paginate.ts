import { ResponseFormatError } from './errors.js';
import type { WireParams } from './transport.js';
import type { List } from './types.js';

/** `limit` is 1 to 100 (spec 4.0); checked before anything is sent. */
export function checkLimit(limit: unknown): void {
  if (limit === undefined || limit === null) return;
  const value = typeof limit === 'string' && /^\d+$/.test(limit) ? Number(limit) : limit;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 100) {
    throw new RangeError(`limit must be an integer from 1 to 100, got ${String(limit)}`);
  }
}

/**
 * Every item of a paged list, following `next_page_token` until `has_more` is false. Iterate it for
 * items, or call `.pages()` for whole pages.
 */
export class Paginator<T> implements AsyncIterable<T> {
  constructor(
    private readonly operation: string,
    private readonly params: WireParams,
    private readonly fetchPage: (params: WireParams) => Promise<List<T>>,
  ) {
    checkLimit(params.limit);
  }

  /** The whole pages, one call each, fetched as the loop asks for them; a list that claims more without a new token throws. */
  async *pages(): AsyncGenerator<List<T>> {
    let token: string | undefined;
    for (;;) {
      const page = await this.fetchPage(token === undefined ? this.params : { ...this.params, page_token: token });
      yield page;
      if (!page.has_more) return;
      const next = String(page.next_page_token ?? '');
      // A list that says it has more but gives no new place to continue would loop forever.
      if (next === '' || next === '0' || next === token) {
        throw new ResponseFormatError(this.operation, 200, 'application/json', `has_more without a usable next_page_token (${next})`);
      }
      token = next;
    }
  }

  /** The items of every page in order (`for await (const chat of client.paginate('getchats', ...))`). */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item, collected (for lists known to be small). */
  async all(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
