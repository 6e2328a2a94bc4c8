import { ACTIONS, FILTER_FAMILIES } from '../activity.js';
import type { Caller } from '../auth.js';
import type { GroupScope, ServiceCore } from '../core.js';
import { parseDateTime, startOfDay } from '../dates.js';
import { badRequest } from '../errors.js';
import type { ActivityEntry } from '../model.js';
import { defineOp, type Operation } from '../operation.js';
import { listView, type SortSpec } from '../paging.js';
import type { Params } from '../params.js';

const DAY_MS = 86_400_000;
const RESTRICT_DATES = ['today', 'last_week', 'last_30_days', 'before', 'after', 'between'] as const;
type RestrictDate = (typeof RESTRICT_DATES)[number];

/** Spec 4.1 names the two sort fields; newest first is our default. */
const ACTIVITY_SORT: SortSpec<ActivityEntry> = {
  fields: { id: (e) => e.seq, created: (e) => e.created },
  defaultField: 'created',
  defaultDir: 'desc',
};

/** Bounds on `created`, each inclusive; either may be open. */
interface Window {
  from?: number;
  to?: number;
}

/** A date parameter read in the caller's timezone; absent or unparsable is `invalid <name>`. */
function dateParam(params: Params, name: 'start_date' | 'end_date', timezone: string): number {
  const text = params.string(name);
  const instant = text ? parseDateTime(text, timezone) : undefined;
  if (instant === undefined) throw badRequest(`invalid ${name}`);
  return instant;
}

/** A bare date (no time of day) as an end of range means the whole of that day. */
function isBareDate(text: string | undefined): boolean {
  return text !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(text.trim());
}

/**
 * The period `restrict_date` names. The dates are only read for the values that use them (spec 4.1:
 * "start of the period for `after` and `between`"), so a stray start_date next to `today` is ignored.
 */
function dateWindow(core: ServiceCore, params: Params, timezone: string): Window {
  const restrict = params.oneOf<RestrictDate>('restrict_date', RESTRICT_DATES);
  const now = core.now();
  switch (restrict) {
    case undefined:
      return {};
    case 'today':
      return { from: startOfDay(now, timezone) };
    case 'last_week':
      return { from: now - 7 * DAY_MS };
    case 'last_30_days':
      return { from: now - 30 * DAY_MS };
    case 'after':
      // "After" excludes the instant itself.
      return { from: dateParam(params, 'start_date', timezone) + 1 };
    case 'before': {
      // The spec gives `before` no date of its own; end_date reads best, start_date is accepted too.
      const name = params.has('end_date') || !params.has('start_date') ? 'end_date' : 'start_date';
      return { to: dateParam(params, name, timezone) - 1 };
    }
    case 'between': {
      const from = dateParam(params, 'start_date', timezone);
      let to = dateParam(params, 'end_date', timezone);
      // "between 2024-05-01 and 2024-05-10" includes the 10th: a bare end date runs to that day's end.
      if (isBareDate(params.string('end_date'))) to = nextLocalMidnight(params.string('end_date')!, timezone) - 1;
      if (from > to) throw badRequest('invalid end_date');
      return { from, to };
    }
  }
}

/** Midnight at the start of the day after a bare `YYYY-MM-DD`, in the zone (DST-safe: re-parsed). */
function nextLocalMidnight(date: string, timezone: string): number {
  const [year, month, day] = date.trim().split('-').map(Number) as [number, number, number];
  const next = new Date(Date.UTC(year, month - 1, day + 1)).toISOString().slice(0, 10);
  return parseDateTime(next, timezone)!;
}

/**
 * The subscription a member filter names. `member_info_id` must be a live subscription of this group
 * (banned members included: they are still subscribed); `past_member_info_id` a removed one.
 */
function memberFilter(core: ServiceCore, params: Params, scope: GroupScope): string | undefined {
  const live = optionalFilterId(params, 'member_info_id');
  const past = optionalFilterId(params, 'past_member_info_id');
  if (live !== undefined && past !== undefined) {
    throw badRequest('give one of member_info_id and past_member_info_id, not both');
  }
  if (live !== undefined) {
    const sub = core.store.subscriptions.get(live);
    if (!sub || sub.groupId !== scope.group.id || sub.removed !== undefined) throw badRequest('invalid member_info_id');
    return sub.id;
  }
  if (past !== undefined) {
    const sub = core.store.subscriptions.get(past);
    if (!sub || sub.groupId !== scope.group.id || sub.removed === undefined) {
      throw badRequest('invalid past_member_info_id');
    }
    return sub.id;
  }
  return undefined;
}

/**
 * An optional id filter. `0` is how the service writes "no id" (activity_log.member_info_id of an entry
 * about nobody), so clients that always send the field with its zero value mean "no filter".
 */
function optionalFilterId(params: Params, name: string): string | undefined {
  const value = params.string(name);
  return value === undefined || value === '' || value === '0' ? undefined : value;
}

function entriesFor(core: ServiceCore, params: Params, caller: Caller, scope: GroupScope): ActivityEntry[] {
  const family = params.oneOf('filter_by', FILTER_FAMILIES);
  const action = params.string('action') || undefined;
  // Object.hasOwn, not `in`: "toString" is not an activity type.
  if (action !== undefined && !Object.hasOwn(ACTIONS, action)) throw badRequest('invalid action');
  const { from, to } = dateWindow(core, params, caller.user.timezone);
  const memberInfoId = memberFilter(core, params, scope);
  return [...core.store.activity.values()].filter((entry) =>
    entry.groupId === scope.group.id &&
    (family === undefined || (ACTIONS as Record<string, string>)[entry.action] === family) &&
    (action === undefined || entry.action === action) &&
    (from === undefined || entry.created >= from) &&
    (to === undefined || entry.created <= to) &&
    (memberInfoId === undefined || entry.memberInfoId === memberInfoId));
}

export const activityOperations: Operation[] = [
  defineOp('getactivitylog', 'GET', ({ core, params, caller }) => {
    const scope = core.groupScope(params, caller);
    core.require(scope, 'view_activity');
    const entries = entriesFor(core, params, caller, scope);
    const page = core.pager.page(entries, params, ACTIVITY_SORT, `getactivitylog ${caller.user.id} ${scope.group.id}`);
    return listView(page, page.items.map((entry) => core.present.activity(entry)));
  }),
];
