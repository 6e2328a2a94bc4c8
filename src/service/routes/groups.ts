import type { Caller } from '../auth.js';
import type { GroupScope, ServiceCore } from '../core.js';
import type { Group, Subscription } from '../model.js';
import { defineOp, type Operation } from '../operation.js';
import { listView, type SortSpec } from '../paging.js';
import { invalidValue, noPermission } from '../errors.js';
import type { Params } from '../params.js';
import { seesGroup } from '../perms.js';
import { subgroupsOf } from '../subgroups.js';
import { foundGroupScope } from '../visibility.js';

/**
 * The calls every public client makes first, outside the described interface (spec 4.5) and ours
 * (docs/protocol.md "Extensions"): shaped after the spec's objects, with its paging, permissions and
 * id styles. A group named that does not exist or cannot be seen is `group_not_found`.
 */

const groupNameOf = (core: ServiceCore) => (sub: Subscription): string =>
  core.store.groups.get(sub.groupId)?.name.toLowerCase() ?? '';

const GROUP_SORT: SortSpec<Group> = {
  fields: { name: (g) => g.name.toLowerCase(), created: (g) => g.created, id: (g) => g.seq },
  defaultField: 'name',
  defaultDir: 'asc',
};

const MEMBER_SORT = (core: ServiceCore): SortSpec<Subscription> => {
  const user = (sub: Subscription) => core.store.users.get(sub.userId);
  return {
    fields: {
      created: (s) => s.created,
      updated: (s) => s.updated,
      id: (s) => s.seq,
      full_name: (s) => user(s)?.fullName.toLowerCase() ?? '',
      user_name: (s) => user(s)?.userName.toLowerCase() ?? '',
    },
    defaultField: 'created',
    defaultDir: 'asc',
  };
};

/**
 * A member as another caller sees them: the e-mail address and the moderator notes only for those who
 * manage members (and the address for the member themself), so a member list is not an address harvest.
 * `extra_member_data` (the real service's custom profile fields, read by admin clients) is empty here.
 */
function memberView(core: ServiceCore, scope: GroupScope, sub: Subscription, caller: Caller): Record<string, unknown> {
  const view = core.present.subscription(sub, true);
  const manages = scope.perms.manage_members;
  if (!manages && sub.userId !== caller.user.id) view.email = '';
  if (!manages) view.moderator_notes = '';
  view.extra_member_data = [];
  return view;
}

/** The kinds `type` picks in getmembers (admin clients send them); the local service has no pending or bouncing members. */
const MEMBER_TYPES: Record<string, (sub: Subscription) => boolean> = {
  members: (sub) => sub.role !== 'banned',
  mods: (sub) => sub.role === 'owner' || sub.role === 'moderator',
  banned: (sub) => sub.role === 'banned',
  pending: () => false,
  bouncing: () => false,
};

/**
 * The group's members the caller may list: banned ones only for those who may ban (to others they are
 * not members), narrowed by `type` when given.
 */
function listedMembers(core: ServiceCore, scope: GroupScope, params: Params): Subscription[] {
  const type = params.string('type');
  const kind = type === undefined || type === '' ? undefined : MEMBER_TYPES[type];
  if (type && !kind) throw invalidValue('type');
  if (type === 'banned' && !scope.perms.ban_members) throw noPermission('ban_members');
  return [...core.store.subscriptions.values()].filter((sub) =>
    sub.groupId === scope.group.id && sub.removed === undefined && (sub.role !== 'banned' || scope.perms.ban_members) &&
    (!kind || kind(sub)));
}

/** Whether a member matches a searchmembers query: by name, and by address for those who see addresses. */
function matchesQuery(core: ServiceCore, sub: Subscription, query: string, byEmail: boolean): boolean {
  const user = core.store.users.get(sub.userId);
  if (!user) return false;
  const fields = [user.fullName, user.userName, ...(byEmail ? [user.email] : [])];
  return fields.some((field) => field.toLowerCase().includes(query));
}

export const groupOperations: Operation[] = [
  // The caller's subscriptions (live ones; banned included, as the group still knows them). Each is the
  // subscription object with the member_info additions (group_name, nice_group_name, perms, ...), since
  // clients take group_id and group_name from it.
  defineOp('getsubs', 'GET', ({ core, params, caller }) => {
    const subs = [...core.store.subscriptions.values()]
      .filter((sub) => sub.userId === caller.user.id && sub.removed === undefined && core.store.groups.has(sub.groupId));
    const byName = groupNameOf(core);
    const spec: SortSpec<Subscription> = {
      // `group`: what an admin report script sends (the real service takes it), the same order.
      fields: { group_name: byName, group: byName, created: (s) => s.created, id: (s) => s.seq },
      defaultField: 'group_name',
      defaultDir: 'asc',
    };
    const page = core.pager.page(subs, params, spec, `getsubs ${caller.user.id}`);
    return listView(page, page.items.map((sub) => ({ ...core.present.subscription(sub, true), object: 'subscription' })));
  }),

  defineOp('getgroup', 'GET', ({ core, params, caller }) => {
    const scope = foundGroupScope(core, params, caller);
    return core.present.group(scope.group, scope.sub);
  }),

  defineOp('getmembers', 'GET', ({ core, params, caller }) => {
    const scope = foundGroupScope(core, params, caller);
    core.require(scope, 'members_visible');
    const subs = listedMembers(core, scope, params);
    const page = core.pager.page(subs, params, MEMBER_SORT(core), `getmembers ${caller.user.id} ${scope.group.id} ${params.string('type') ?? ''}`);
    return listView(page, page.items.map((sub) => memberView(core, scope, sub, caller)));
  }),

  // Members whose name (or, for those who manage members, address) contains `q`, case-insensitively.
  defineOp('searchmembers', 'GET', ({ core, params, caller }) => {
    const scope = foundGroupScope(core, params, caller);
    core.require(scope, 'members_visible');
    const query = (params.string('q') ?? '').trim().toLowerCase();
    const subs = listedMembers(core, scope, params).filter((sub) => matchesQuery(core, sub, query, scope.perms.manage_members));
    const page = core.pager.page(subs, params, MEMBER_SORT(core), `searchmembers ${caller.user.id} ${scope.group.id} ${query}`);
    return listView(page, page.items.map((sub) => memberView(core, scope, sub, caller)), {}, query);
  }),

  defineOp('getsubgroups', 'GET', ({ core, params, caller }) => {
    const scope = foundGroupScope(core, params, caller);
    core.require(scope, 'subgroups_visible');
    const seen = subgroupsOf(core.store, scope.group)
      .map((group) => core.scopeOf(group, caller))
      .filter((sub) => seesGroup(sub.group, sub.sub));
    const page = core.pager.page(seen.map((s) => s.group), params, GROUP_SORT, `getsubgroups ${caller.user.id} ${scope.group.id}`);
    return listView(page, page.items.map((group) => core.present.group(group, core.store.subscriptionOf(caller.user.id, group.id))));
  }),

  // The local service has no databases: an empty list, after the same checks as any group list.
  defineOp('getdatabases', 'GET', ({ core, params, caller }) => {
    const scope = foundGroupScope(core, params, caller);
    core.require(scope, 'database_visible');
    const none: Group[] = [];
    const page = core.pager.page(none, params, GROUP_SORT, `getdatabases ${caller.user.id} ${scope.group.id}`);
    return listView(page, []);
  }),
];
