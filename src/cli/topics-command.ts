import { CLIENT_HELP, CLIENT_OPTIONS } from './client-options.js';
import { parseFlags, parseLimit, requireGroup } from './command.js';
import { printListPage, text, type RawItem } from './list-command.js';
import { EXIT, formatDate, writeOut } from './output.js';

export const TOPICS_HELP = `Usage: groupwire topics --group NAME [--limit N] [--json]

Prints the group's topics, most recently active first: the last message's date, the number of
messages, the subject and who started it.

Options:
  --group NAME             the group (required)
  --limit N                topics to show, 1 to 100 (default 10)
  --json                   print the service's JSON answer instead (ids exactly as sent)
  -h, --help               this text

${CLIENT_HELP}`;

export async function topicsCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: { group: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, ...CLIENT_OPTIONS },
  });
  if (values.help) {
    writeOut(TOPICS_HELP);
    return EXIT.ok;
  }
  return printListPage({
    flags: values,
    operation: 'gettopics',
    params: { group_name: requireGroup(values.group), limit: parseLimit(values.limit) },
    json: values.json ?? false,
    noun: 'topics',
    render: renderTopic,
  });
}

/** `2024-05-01 10:00  3 messages  Subject  (Started By)` */
function renderTopic(topic: RawItem): string {
  const count = text(topic.num_messages);
  const messages = `${count} message${count === '1' ? '' : 's'}`;
  const by = text(topic.name);
  return `${formatDate(topic.most_recent_message)}  ${messages.padEnd(12)} ${text(topic.subject)}${by ? `  (${by})` : ''}\n`;
}
