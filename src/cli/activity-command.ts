import { CLIENT_HELP, CLIENT_OPTIONS } from './client-options.js';
import { oneOf, parseFlags, parseLimit, requireGroup } from './command.js';
import { printListPage, text, type RawItem } from './list-command.js';
import { EXIT, formatDate, htmlToText, writeOut } from './output.js';

const FILTERS = ['member', 'message', 'mod', 'pay'] as const;
const RESTRICTIONS = ['today', 'last_week', 'last_30_days', 'before', 'after', 'between'] as const;

export const ACTIVITY_HELP = `Usage: groupwire activity --group NAME [options]

Prints the group's activity log, newest first: date, action and what happened. Needs the
view_activity permission (moderators and owners).

Options:
  --group NAME             the group (required)
  --filter-by F            ${FILTERS.join(', ')}
  --restrict-date R        ${RESTRICTIONS.join(', ')}
  --start-date D           with before, after or between (a date or date-time)
  --end-date D             with between
  --action A               one action type (member_joined, message_posted, chat_created, ...)
  --member-info-id ID      entries about one membership
  --limit N                entries to show, 1 to 100 (default 10)
  --json                   print the service's JSON answer instead (ids exactly as sent)
  -h, --help               this text

${CLIENT_HELP}`;

export async function activityCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: {
      group: { type: 'string' }, 'filter-by': { type: 'string' }, 'restrict-date': { type: 'string' },
      'start-date': { type: 'string' }, 'end-date': { type: 'string' }, action: { type: 'string' },
      'member-info-id': { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' }, ...CLIENT_OPTIONS,
    },
  });
  if (values.help) {
    writeOut(ACTIVITY_HELP);
    return EXIT.ok;
  }
  return printListPage({
    flags: values,
    operation: 'getactivitylog',
    params: {
      group_name: requireGroup(values.group),
      filter_by: oneOf('filter-by', values['filter-by'], FILTERS),
      restrict_date: oneOf('restrict-date', values['restrict-date'], RESTRICTIONS),
      start_date: values['start-date'],
      end_date: values['end-date'],
      action: values.action,
      member_info_id: values['member-info-id'],
      limit: parseLimit(values.limit),
    },
    json: values.json ?? false,
    noun: 'entries',
    render: renderEntry,
  });
}

/** `2024-05-01 10:00  member_joined  Bob Member joined the group` */
function renderEntry(entry: RawItem): string {
  const action = text(entry.action);
  return `${formatDate(entry.created)}  ${action ? `${action.padEnd(18)} ` : ''}${htmlToText(entry.entry)}\n`;
}
