import type { OperationName } from '../api/index.js';
import type { WireParams } from '../api/transport.js';
import { clientFromFlags, type ClientFlags } from './client-options.js';
import { EXIT, formatJson, pageFooter, writeOut } from './output.js';
import { callRaw, isList } from './raw-call.js';
import { ResponseFormatError } from '../api/index.js';
import { terminalText } from './terminal-text.js';

/** A list item as parsed losslessly: numbers are LosslessNumber objects, so read them with String(). */
export type RawItem = Record<string, unknown>;

/**
 * The shape of the readable list commands: one page of a list operation, printed as the raw JSON
 * (`--json`, ids exact) or one rendering per item and a footer when there is more.
 */
export async function printListPage(options: {
  flags: ClientFlags;
  operation: OperationName;
  params: WireParams;
  json: boolean;
  noun: string;
  render: (item: RawItem) => string;
}): Promise<number> {
  const client = clientFromFlags(options.flags);
  try {
    const value = await callRaw(client, options.operation, options.params);
    if (options.json) {
      writeOut(formatJson(value));
      return EXIT.ok;
    }
    if (!isList(value)) throw new ResponseFormatError(options.operation, 200, 'application/json', 'expected a list object');
    const data = (value.data ?? []) as RawItem[];
    writeOut(data.map(options.render).join(''));
    writeOut(pageFooter({ ...value, data }, options.noun));
    return EXIT.ok;
  } finally {
    await client.close();
  }
}

/**
 * A value of a losslessly parsed item as one line of text for a terminal ('' when missing): its
 * controls and bidi controls shown as codes, so a subject cannot steer the terminal or forge a line.
 */
export function text(value: unknown): string {
  return value === undefined || value === null ? '' : terminalText(String(value));
}
