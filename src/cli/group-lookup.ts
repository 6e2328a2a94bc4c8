import {
  GroupsError, ResponseFormatError, UnknownGroupsError, type GroupsClient, type GroupSubscription,
} from '../api/index.js';

/** How a command names a group on the wire: by id when the caller's subscriptions know it, else by name. */
export type GroupParam = { group_id: string } | { group_name: string };

/**
 * The caller's subscriptions (`getsubs`, every page), or undefined from a service that does not have
 * the call (an unknown operation answers an HTML page or an unknown error type there).
 */
export async function subscriptionsOf(client: GroupsClient): Promise<GroupSubscription[] | undefined> {
  try {
    return await client.paginate<GroupSubscription>('getsubs', { limit: 100 }).all();
  } catch (error) {
    if (error instanceof ResponseFormatError || error instanceof UnknownGroupsError) return undefined;
    if (error instanceof GroupsError && error.type === 'bad_request' && /getsubs/.test(error.extra)) return undefined;
    throw error;
  }
}

/**
 * `--group X` where a command sends a group: X may be the group's name (any case) or its id, looked up
 * in the caller's subscriptions; a group the caller is not subscribed to (a public one) goes by name,
 * and the service answers whether it exists.
 */
export async function lookUpGroup(client: GroupsClient, value: string): Promise<GroupParam> {
  const subs = await subscriptionsOf(client);
  const lower = value.toLowerCase();
  const found = subs?.find((sub) => sub.group_id === value) ?? subs?.find((sub) => sub.group_name.toLowerCase() === lower);
  return found ? { group_id: found.group_id } : { group_name: value };
}

/** The name of the group with this id among the caller's subscriptions, if it is one of them. */
export async function groupNameOf(client: GroupsClient, groupId: string): Promise<string | undefined> {
  const subs = await subscriptionsOf(client);
  return subs?.find((sub) => sub.group_id === groupId)?.group_name;
}
