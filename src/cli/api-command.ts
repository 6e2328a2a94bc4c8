import { isOperation, LIST_OPERATIONS, OPERATION_PARAMS, OPERATIONS, type OperationName } from '../api/index.js';
import { nearestName } from '../config/nearest-name.js';
import type { WireParams } from '../api/transport.js';
import { CLIENT_HELP, CLIENT_OPTIONS, clientFromFlags, type ClientFlagName, type ClientFlags } from './client-options.js';
import { lookUpGroup } from './group-lookup.js';
import { EXIT, formatJson, writeOut } from './output.js';
import { callRaw, callRawAll } from './raw-call.js';
import { UsageError } from './usage-error.js';

export const API_HELP = `Usage: groupwire api <operation> [--param value ...] [--extended] [--all]

Calls any operation of the Group Discussion Service and prints its JSON answer (2-space indented, every
id exactly as the service sent it). Parameters go as given: --group_name demo --limit 5, or --name=value.
A parameter the operation does not take is refused (exit 2) with the nearest valid name ('groupwire
api OPERATION --help' lists them), unless --unchecked is given. POST operations get the csrf token by
themselves.

Options:
  --group NAME|ID          the group, by name or id: looked up in your subscriptions (getsubs) and sent
                           as group_id; a group you are not subscribed to is sent as group_name
  --extended               add extended=true (the answer becomes [result, user])
  --unchecked              send every parameter as given, also names groupwire does not know (a parameter
                           a newer service takes: the spec lets services add optional ones)
  --all                    follow next_page_token through every page of a list operation and print one
                           JSON array of all items (100 per page unless --limit is given)
  -h, --help               this text

${CLIENT_HELP}
Operations:
${wrap(Object.keys(OPERATIONS).filter((op) => op !== 'downloadarchives'), '  ')}
  (downloadarchives: use 'groupwire archive download')

Examples:
  groupwire api getchats --group_name demo
  groupwire api getmessage --group demo --msg_num 1
  groupwire api getsubs
  groupwire api getchathistory --chat_id 42 --all
  groupwire api newchat --group_name demo --subject lunch --desc 'Where to eat'
`;

function wrap(words: string[], indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    if (line && line.length + word.length + 2 > 100) {
      lines.push(line);
      line = '';
    }
    line = line ? `${line}, ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l) => `${indent}${l}`).join('\n');
}

interface ApiArgs {
  help: boolean;
  operation?: OperationName;
  params: WireParams;
  client: ClientFlags;
  extended: boolean;
  all: boolean;
  unchecked: boolean;
  /** `--group`: a name or id, looked up before the call (group-lookup.ts). */
  group?: string;
}

/** Free-form `--name value` pairs: parsed by hand, as parseArgs needs the names in advance. */
export function parseApiArgs(args: string[]): ApiArgs {
  const result: ApiArgs = { help: false, params: {}, client: {}, extended: false, all: false, unchecked: false };
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help') return { ...result, help: true };
    if (!arg.startsWith('--') || arg === '--') {
      if (arg.startsWith('-') && arg !== '-') throw new UsageError(`unknown option ${arg}`);
      positionals.push(arg);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = equals === -1 ? arg.slice(2) : arg.slice(2, equals);
    const inline = equals === -1 ? undefined : arg.slice(equals + 1);
    if (name === 'extended' || name === 'all' || name === 'unchecked') {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      result[name] = true;
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = args[i + 1];
      if (next === undefined || next.startsWith('--')) {
        throw new UsageError(`--${name} needs a value (write --${name}=VALUE for a value starting with --)`);
      }
      value = next;
      i += 1;
    }
    if (Object.hasOwn(CLIENT_OPTIONS, name)) {
      result.client[name as ClientFlagName] = value;
      continue;
    }
    if (name === 'group') {
      if (result.group !== undefined) throw new UsageError('--group is given twice');
      result.group = value;
      continue;
    }
    // Names are checked against the operation's once it is known (checkParamNames).
    if (Object.hasOwn(result.params, name)) throw new UsageError(`--${name} is given twice`);
    result.params[name] = value;
  }
  const [operation, ...extra] = positionals;
  if (operation === undefined) throw new UsageError('which operation? e.g. groupwire api getchats --group_name demo');
  if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]} (parameters are --name value)`);
  if (!isOperation(operation)) throw new UsageError(`unknown operation ${operation}; one of: ${Object.keys(OPERATIONS).join(', ')}`);
  if (operation === 'downloadarchives') throw new UsageError("downloadarchives answers a zip: use 'groupwire archive download'");
  if (result.all && !(LIST_OPERATIONS as readonly string[]).includes(operation)) {
    throw new UsageError(`--all pages through list operations only (${LIST_OPERATIONS.join(', ')}); ${operation} is not one`);
  }
  if (result.all && result.extended) throw new UsageError('--all and --extended do not go together');
  if (result.group !== undefined) {
    if (!OPERATION_PARAMS[operation].includes('group_id')) throw new UsageError(`${operation} takes no group (--group)`);
    if (result.params.group_id !== undefined || result.params.group_name !== undefined) {
      throw new UsageError('give --group, or --group_id / --group_name, not both');
    }
  }
  if (!result.unchecked) checkParamNames(operation, Object.keys(result.params));
  return { ...result, operation };
}

/**
 * Refuses a parameter the operation does not take: the service would ignore it (spec part 9) and
 * answer about the one it then misses (`--groupname demo` → `invalid group_id`).
 */
function checkParamNames(operation: OperationName, names: string[]): void {
  const known = [...OPERATION_PARAMS[operation], ...(OPERATIONS[operation] === 'POST' ? ['csrf'] : [])];
  for (const name of names) {
    if (known.includes(name)) continue;
    const nearest = nearestName(name, known);
    const hint = nearest ? `did you mean --${nearest}?` : `it takes ${known.map((k) => `--${k}`).join(', ')}`;
    throw new UsageError(`unknown parameter --${name} for ${operation} (${hint})`);
  }
}

export async function apiCommand(args: string[]): Promise<number> {
  const parsed = parseApiArgs(args);
  if (parsed.help || !parsed.operation) {
    // `groupwire api getchats --help` also lists what that operation takes.
    const named = args.find((arg) => !arg.startsWith('-') && isOperation(arg)) as OperationName | undefined;
    const takes = named ? `\nParameters of ${named}: ${OPERATION_PARAMS[named].map((name) => `--${name}`).join(', ')}\n` : '';
    writeOut(`${API_HELP}${takes}`);
    return EXIT.ok;
  }
  const { operation } = parsed;
  const params: WireParams = { ...parsed.params };
  if (parsed.extended) params.extended = 'true';
  const client = clientFromFlags(parsed.client);
  try {
    if (parsed.group !== undefined) Object.assign(params, await lookUpGroup(client, parsed.group));
    if (parsed.all) {
      writeOut(formatJson(await callRawAll(client, operation, { limit: 100, ...params })));
    } else {
      const value = await callRaw(client, operation, params);
      if (value !== undefined) writeOut(formatJson(value));
    }
    return EXIT.ok;
  } finally {
    await client.close();
  }
}
