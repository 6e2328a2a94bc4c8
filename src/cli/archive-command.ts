import { archiveDownloadCommand } from './archive-download-command.js';
import { CLIENT_HELP, CLIENT_OPTIONS } from './client-options.js';
import { CommandUsageError, inCommand, parseFlags, parseLimit, requireGroup } from './command.js';
import { printListPage, text, type RawItem } from './list-command.js';
import { EXIT, formatDate, writeOut } from './output.js';
import { UsageError } from './usage-error.js';

export const ARCHIVE_HELP = `Usage: groupwire archive <subcommand> [options]

Subcommands:
  download   download the group's archive and write its mbox
  search     search the group's messages

Run 'groupwire archive <subcommand> --help' for a subcommand's options.
`;

export const ARCHIVE_SEARCH_HELP = `Usage: groupwire archive search --group NAME QUERY [--limit N] [--json]

Searches the group's archive. QUERY words match words starting with them; "quoted phrases", #hashtag and
posterid:ID work as the service describes; '' matches every message. Prints one result per message:
its number, date, author, subject, and the summary around the match.

Options:
  --group NAME             the group (required)
  --limit N                results to show, 1 to 100 (default 10)
  --json                   print the service's JSON answer instead (ids exactly as sent)
  -h, --help               this text

${CLIENT_HELP}`;

export async function archiveCommand(args: string[]): Promise<number> {
  const [subcommand, ...rest] = args;
  switch (subcommand) {
    case 'download':
      return inCommand('archive download', () => archiveDownloadCommand(rest));
    case 'search':
      return inCommand('archive search', () => archiveSearchCommand(rest));
    case undefined:
      writeOut(ARCHIVE_HELP);
      return EXIT.usage;
    case '-h':
    case '--help':
    case 'help':
      writeOut(ARCHIVE_HELP);
      return EXIT.ok;
    default:
      throw new CommandUsageError(`unknown archive subcommand ${subcommand} (download or search)`, 'archive');
  }
}

export async function archiveSearchCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args,
    options: { group: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, ...CLIENT_OPTIONS },
    allowPositionals: true,
  });
  if (values.help) {
    writeOut(ARCHIVE_SEARCH_HELP);
    return EXIT.ok;
  }
  const group = requireGroup(values.group);
  if (positionals.length === 0) throw new UsageError("QUERY is required ('' matches every message)");
  const limit = parseLimit(values.limit);
  return printListPage({
    flags: values,
    operation: 'searcharchives',
    params: { group_name: group, q: positionals.join(' '), limit },
    json: values.json ?? false,
    noun: 'results',
    render: renderHit,
  });
}

/** `#12  2024-05-01 10:00  Author Name  Subject` and the summary, indented, below. */
function renderHit(hit: RawItem): string {
  const summary = text(hit.summary || hit.snippet);
  return `#${text(hit.msg_num)}  ${formatDate(hit.created)}  ${text(hit.name)}  ${text(hit.subject)}\n${summary ? `    ${summary}\n` : ''}`;
}
