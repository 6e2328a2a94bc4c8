import { CLIENT_HELP, CLIENT_OPTIONS, clientFromFlags } from './client-options.js';
import { parseFlags } from './command.js';
import { text, type RawItem } from './list-command.js';
import { EXIT, formatJson, writeOut } from './output.js';
import { callRawAll } from './raw-call.js';

export const GROUPS_HELP = `Usage: groupwire groups [--json]

Prints the groups you are subscribed to (getsubs, every page): the name to give as --group, the
group's id, your standing there (owner, moderator, member or banned) and its title.

Options:
  --json                   print the subscriptions as the service sent them (one JSON array, ids exact)
  -h, --help               this text

${CLIENT_HELP}`;

export async function groupsCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, ...CLIENT_OPTIONS },
  });
  if (values.help) {
    writeOut(GROUPS_HELP);
    return EXIT.ok;
  }
  const client = clientFromFlags(values);
  try {
    const subs = (await callRawAll(client, 'getsubs', { limit: 100 })) as RawItem[];
    if (values.json) {
      writeOut(formatJson(subs));
      return EXIT.ok;
    }
    const width = Math.max(4, ...subs.map((sub) => text(sub.group_name).length));
    writeOut(subs.map((sub) => renderSubscription(sub, width)).join(''));
    writeOut(`${subs.length} group${subs.length === 1 ? '' : 's'}\n`);
    return EXIT.ok;
  } finally {
    await client.close();
  }
}

/** The caller's standing in a group, from its subscription's status and mod_status. */
const STANDING = new Map([['sub_modstatus_owner', 'owner'], ['sub_modstatus_moderator', 'moderator']]);

/** `demo    id 12  moderator  Demo Group` */
function renderSubscription(sub: RawItem, width: number): string {
  const standing = text(sub.status) === 'sub_status_banned' ? 'banned' : STANDING.get(text(sub.mod_status)) ?? 'member';
  const title = text(sub.nice_group_name);
  const name = text(sub.group_name);
  return `${`${name.padEnd(width)}  id ${text(sub.group_id)}  ${standing.padEnd(9)}${title && title !== name ? `  ${title}` : ''}`.trimEnd()}\n`;
}
