import type { Group } from './model.js';
import type { Store } from './store.js';

/**
 * Subgroups as the real service names them (field notes): `parent+sub`. A group whose name has a `+`
 * and whose part before the last `+` names an existing group is that group's subgroup; nothing else
 * is stored, so a subgroup is made like any group (seed or admin API) under such a name.
 */
export function parentGroupOf(store: Store, group: Group): Group | undefined {
  const plus = group.name.lastIndexOf('+');
  if (plus <= 0) return undefined;
  return store.groupsByName.get(group.name.slice(0, plus).toLowerCase());
}

/** The direct subgroups of `group` (`<name>+<sub>`, with no further `+`). */
export function subgroupsOf(store: Store, group: Group): Group[] {
  const prefix = `${group.name.toLowerCase()}+`;
  return [...store.groups.values()].filter((g) => {
    const name = g.name.toLowerCase();
    return name.startsWith(prefix) && !name.slice(prefix.length).includes('+');
  });
}
