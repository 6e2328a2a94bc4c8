import { describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import { parseWireJson } from '../src/api/wire-json.js';
import { FORMATS } from '../plugins/logger/formats.js';
import { wireLine } from '../src/api/wire-line.js';

/**
 * The jsonl entry made from a frame's text must be the entry serialising the parsed message gives:
 * read back, the same object (ids as strings of their exact digits); and whatever it cannot vouch for
 * is left to the serialiser.
 */
const RENDER = { timeZone: 'UTC', timeFormat: 'HH:mm' };

function frame(ids: { id: string; user: string; group: string; chat: string }, extra = ''): string {
  return `{"object":"chat_message","id":${ids.id},"created":"2026-11-26T21:50:01.123Z","version":1,"user_id":${ids.user},`
    + `"group_id":${ids.group},"chat_id":${ids.chat},"type":"chat_msg_type_normal","message":"say \\"id\\":5, é and \\\\","msg_num":7,`
    + `"display_name":"Alice","user_name":"alice","profile_photo_url":"","profile_privacy":"profile_members","email":"alice@example.com"${extra}}`;
}

const serialised = (wire: string) => `${JSON.stringify(parseWireJson(wire))}\n`;

describe('logger: the jsonl entry from the frame\'s text', () => {
  test.each([
    ['numeric ids', { id: '1234', user: '5', group: '1', chat: '2' }],
    ['ids above 2^53', { id: '18446744073709551615', user: '9007199254740993', group: '1', chat: '12345678901234567890' }],
    ['opaque ids', { id: '"a-b:c"', user: '"u_1"', group: '"g"', chat: `"${'x'.repeat(255)}"` }],
    ['negative ids', { id: '-3', user: '-9007199254740993', group: '0', chat: '2' }],
  ])('%s: the line reads back as the parsed message, ids as strings of their exact digits', (_name, ids) => {
    const wire = frame(ids);
    const line = wireLine(wire)!;
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(JSON.parse(line)).toEqual(parseWireJson(wire));
    // The frames above are compact, as the service sends them: the very line serialising gives.
    expect(line).toBe(serialised(wire));
    const parsed = JSON.parse(line) as Record<string, unknown>;
    for (const key of ['id', 'user_id', 'group_id', 'chat_id']) expect(typeof parsed[key]).toBe('string');
    expect(parsed.msg_num).toBe(7);
  });

  test('id keys at any depth, numbers in arrays and under other keys as the client parses them', () => {
    const wire = frame({ id: '1', user: '2', group: '3', chat: '4' },
      ',"attachments":[{"file_id":77,"size":12,"next_attachment_id":5}],"counts":[1,2,12345678901234567890],"big":99999999999999999999,"score":1.5');
    const line = wireLine(wire)!;
    expect(JSON.parse(line)).toEqual(parseWireJson(wire));
    expect(line).toBe(serialised(wire));
  });

  test('escapes stay as the service wrote them: the same value', () => {
    const wire = frame({ id: '1', user: '2', group: '3', chat: '4' }, ',"note":"\\u00e9\\u0001\\/"');
    const line = wireLine(wire)!;
    expect(line).toContain('\\u00e9\\u0001\\/');
    expect(JSON.parse(line)).toEqual(parseWireJson(wire));
  });

  test.each([
    ['a line break between fields', '{"object":"chat_message",\n"id":1,"msg_num":1}'],
    ['an id written as a fraction', '{"object":"chat_message","id":1.0,"msg_num":1}'],
    ['an id written with an exponent', '{"object":"chat_message","id":1e3,"msg_num":1}'],
    ['an id of -0', '{"object":"chat_message","id":-0,"msg_num":1}'],
    ['a key with an escape', '{"object":"chat_message","\\u0069d":1,"msg_num":1}'],
  ])('%s: left to the serialiser', (_name, wire) => {
    expect(wireLine(wire)).toBeUndefined();
  });

  test('the jsonl format takes the frame\'s text when given, and serialises the message otherwise', () => {
    const wire = frame({ id: '18446744073709551615', user: '5', group: '1', chat: '2' });
    const message = parseWireJson(wire) as ChatMessage;
    expect(FORMATS.jsonl.entry(message, RENDER, wire)).toBe(serialised(wire));
    expect(FORMATS.jsonl.entry(message, RENDER)).toBe(serialised(wire));
    // A frame it cannot vouch for falls back to the message.
    const pretty = JSON.stringify(JSON.parse(frame({ id: '1', user: '5', group: '1', chat: '2' })), null, 1);
    const parsed = parseWireJson(pretty) as ChatMessage;
    expect(FORMATS.jsonl.entry(parsed, RENDER, pretty)).toBe(`${JSON.stringify(parsed)}\n`);
  });
});
