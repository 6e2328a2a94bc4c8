import { randomBytes, randomInt } from 'node:crypto';
import type { Clock } from './clock.js';
import { invalidValue } from './errors.js';
import { mintId, wireId, type IdStyle } from './ids.js';
import type { Params } from './params.js';

export type SortDir = 'asc' | 'desc';
type SortValue = number | string;

/** How one operation's items may be sorted: the valid `sort_field` values and the default order. */
export interface SortSpec<T> {
  fields: Record<string, (item: T) => SortValue>;
  defaultField: string;
  defaultDir: SortDir;
}

interface Cursor {
  scope: string;
  sortField: string;
  sortDir: SortDir;
  lastValue: SortValue;
  lastSeq: number;
  expires: number;
}

export interface Page<T> {
  items: T[];
  totalCount: number;
  startItem: number;
  endItem: number;
  hasMore: boolean;
  nextPageToken: string;
  sortField: string;
  sortDir: SortDir;
}

const CURSOR_TTL_MS = 3600_000;
const MAX_CURSORS = 100_000;
/**
 * The last page's `next_page_token`, as the real service sends it: the JSON number 0 in every id style
 * (public clients stop paging on `== 0` and never look at `has_more`; a string "0" would page on).
 * Also taken as `page_token` for the first page, as one client sends it.
 */
export const LAST_PAGE_TOKEN = '0';

/**
 * Keyset paging with server-side cursors. A `page_token` names the position after the last item of
 * the page before, so items added or removed meanwhile neither repeat nor get skipped (our decision,
 * docs/protocol.md "Lists").
 */
export class Pager {
  private readonly cursors = new Map<string, Cursor>();

  constructor(
    private readonly clock: Clock,
    private readonly idStyle: IdStyle,
  ) {}

  /** `scope` names the caller, the operation and what the list is of; a token only works in its scope. */
  page<T extends { seq: number }>(all: T[], params: Params, spec: SortSpec<T>, scope: string): Page<T> {
    const limit = params.integer('limit', 1, 100) ?? 10;
    const token = params.string('page_token');
    let cursor: Cursor | undefined;
    let sortField: string;
    let sortDir: SortDir;
    if (token !== undefined && token !== '' && token !== LAST_PAGE_TOKEN) {
      cursor = this.cursors.get(token);
      if (!cursor || cursor.scope !== scope || cursor.expires < this.clock.now()) throw invalidValue('page_token');
      ({ sortField, sortDir } = cursor);
    } else {
      sortField = params.string('sort_field') || spec.defaultField;
      if (!(sortField in spec.fields)) throw invalidValue('sort_field');
      const dir = params.string('sort_dir') || spec.defaultDir;
      if (dir !== 'asc' && dir !== 'desc') throw invalidValue('sort_dir');
      sortDir = dir;
    }
    const key = spec.fields[sortField]!;
    const sign = sortDir === 'asc' ? 1 : -1;
    const compare = (a: SortValue, aSeq: number, b: SortValue, bSeq: number): number =>
      sign * (a < b ? -1 : a > b ? 1 : aSeq - bSeq);
    const sorted = [...all].sort((a, b) => compare(key(a), a.seq, key(b), b.seq));

    let start = 0;
    if (cursor) {
      const { lastValue, lastSeq } = cursor;
      start = sorted.findIndex((item) => compare(key(item), item.seq, lastValue, lastSeq) > 0);
      if (start < 0) start = sorted.length;
    }
    const items = sorted.slice(start, start + limit);
    const hasMore = start + items.length < sorted.length;
    const last = items.at(-1);
    let nextPageToken = LAST_PAGE_TOKEN;
    if (hasMore && last) {
      nextPageToken = this.newToken();
      this.remember(nextPageToken, {
        scope, sortField, sortDir, lastValue: key(last), lastSeq: last.seq, expires: this.clock.now() + CURSOR_TTL_MS,
      });
    }
    return {
      items,
      totalCount: sorted.length,
      startItem: items.length ? start + 1 : 0,
      endItem: items.length ? start + items.length : 0,
      hasMore,
      nextPageToken,
      sortField,
      sortDir,
    };
  }

  private newToken(): string {
    // Tokens look like the service's ids: integers (above 2^53 in the big style) or opaque strings.
    if (this.idStyle === 'opaque') return randomBytes(24).toString('base64url');
    return mintId(this.idStyle, randomInt(1, 2 ** 47));
  }

  private remember(token: string, cursor: Cursor): void {
    if (this.cursors.size >= MAX_CURSORS) {
      const oldest = this.cursors.keys().next().value;
      if (oldest !== undefined) this.cursors.delete(oldest);
    }
    this.cursors.set(token, cursor);
  }
}

/** The list object of spec 2.3, with the members the field notes show on every list. */
export function listView<T>(page: Page<T>, data: unknown[], extras: Record<string, unknown> = {}, query = '') {
  return {
    object: 'list',
    total_count: page.totalCount,
    start_item: page.startItem,
    end_item: page.endItem,
    has_more: page.hasMore,
    next_page_token: page.nextPageToken === LAST_PAGE_TOKEN ? 0 : wireId(page.nextPageToken),
    sort_field: page.sortField,
    second_order: '',
    query,
    sort_dir: page.sortDir,
    data,
    ...extras,
  };
}
