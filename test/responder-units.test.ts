import { describe, expect, test } from 'vitest';
import { ArgumentError, argUsage, parseArgs, specProblem, tokenize } from '../plugins/responder/args.js';
import { builtinSpecs } from '../plugins/responder/builtins/specs.js';
import { Cooldowns } from '../plugins/responder/cooldown.js';
import { responderOptions } from '../plugins/responder/options.js';
import { templateProblem } from '../plugins/responder/rules.js';
import { splitMessage } from '../plugins/responder/split.js';
import { Template, TemplateError } from '../plugins/responder/template.js';
import { formatDate, isTimeZone } from '../plugins/responder/text.js';

/** The responder's pure parts: arguments, templates, splitting, cooldowns and its bots.yaml options. */

describe('responder: arguments', () => {
  test('words, quotes and escapes', () => {
    expect(tokenize('  a "b c" \'d "e"\' f\\"g "h\\"i" ').map((w) => w.value)).toEqual(['a', 'b c', 'd "e"', 'f"g', 'h"i']);
    expect(tokenize('x"y z"w').map((w) => w.value)).toEqual(['xy zw']);
    expect(() => tokenize('a "b')).toThrow(new ArgumentError('a double quote is not closed'));
  });

  test('typed arguments: string, int, number, rest; optional and defaults; bounds', () => {
    const specs = [
      { name: 'n', type: 'int' as const, min: 1, max: 5 },
      { name: 'f', type: 'number' as const, optional: true },
      { name: 'rest', type: 'rest' as const, optional: true },
    ];
    expect(parseArgs(specs, '3')).toEqual({ n: 3 });
    expect(parseArgs(specs, '3 -1.5e2 the  "rest" as typed ')).toEqual({ n: 3, f: -150, rest: 'the  "rest" as typed' });
    expect(() => parseArgs(specs, '')).toThrow('n is missing');
    expect(() => parseArgs(specs, '0')).toThrow('n must be at least 1');
    expect(() => parseArgs(specs, '6')).toThrow('n must be at most 5');
    expect(() => parseArgs(specs, '2.5')).toThrow('n must be a whole number, not "2.5"');
    expect(() => parseArgs(specs, '99999999999999999999')).toThrow('whole number');
    expect(() => parseArgs(specs, '1 x')).toThrow('f must be a number, not "x"');
    expect(parseArgs([{ name: 'n', type: 'int', default: 5 }], '')).toEqual({ n: 5 });
    expect(() => parseArgs([{ name: 'a' }], 'one two')).toThrow('too many arguments ("two" is one too many)');
    expect(argUsage(specs)).toBe('<n> [f] [rest…]');
  });

  test('argument lists that cannot work are refused', () => {
    expect(specProblem([{ name: 'a', type: 'rest' }, { name: 'b' }])).toBe('argument a is rest, so it must be the last');
    expect(specProblem([{ name: 'a', optional: true }, { name: 'b' }])).toBe('argument b is required but follows an optional one');
    expect(specProblem([{ name: 'a' }, { name: 'a' }])).toBe('argument a is declared twice');
    expect(specProblem([{ name: 'a-b' }])).toMatch(/letters, digits and _/);
  });
});

describe('responder: templates', () => {
  const context = {
    user: 'Bob', args: { who: 'world', $text: 'world and more' }, match: { $text: 'deploy api', 0: 'deploy api', 1: 'api', app: 'api' },
    empty: '', list: ['a', 'b'],
  };

  test('variables, objects as their text, filters, literals', () => {
    const render = (source: string) => Template.compile(source).render(context);
    expect(render('Hi {{user}}, {{ args.who }} / {{args}} / {{match}} / {{match.1}} {{match.app}}')).toBe('Hi Bob, world / world and more / deploy api / api api');
    expect(render('{{missing}}|{{args.missing}}|{{user.deep}}')).toBe('||');
    expect(render('{{user | upper}} {{user|lower}} {{empty | default: user}} {{empty | default: "none"}} {{user | default: "x"}}')).toBe('BOB bob Bob none Bob');
    expect(render('{{"{{"}} and {{\'}}\'}} and {{"a | b"}}')).toBe('{{ and }} and a | b');
    expect(render('{{list}} no placeholders } {')).toBe('a b no placeholders } {');
    expect(render('{{constructor}}{{toString}}{{args.__proto__}}')).toBe('');
  });

  test('mistakes are found when the template is read', () => {
    expect(() => Template.compile('{{user')).toThrow(TemplateError);
    expect(() => Template.compile('{{ }}')).toThrow('empty placeholder');
    expect(() => Template.compile('{{user | shout}}')).toThrow('unknown filter "shout"');
    expect(() => Template.compile('{{user | default}}')).toThrow('default needs a value');
    expect(() => Template.compile('{{user name}}')).toThrow('is not a variable');
    expect(Template.compile('{{a.b.1 | default: c.d}}').variables()).toEqual([['a', 'b', '1'], ['c', 'd']]);
  });

  test('rules may use only the variables they have', () => {
    expect(templateProblem('{{user}} {{args.who}}', 'command', ['who'])).toBeUndefined();
    expect(templateProblem('{{args.whom}}', 'command', ['who'])).toBe('{{args.whom}}: the command has no argument whom (it has: who)');
    expect(templateProblem('{{match.1}}', 'command', [])).toMatch(/only for keyword and regex rules/);
    expect(templateProblem('{{args}}', 'regex', [])).toMatch(/only for command rules/);
    expect(templateProblem('{{usr}}', 'keyword', [])).toMatch(/^unknown template variable \{\{usr\}\}/);
  });
});

describe('responder: splitting long answers', () => {
  test('short text stays whole; blank text is nothing', () => {
    expect(splitMessage('hello', 10)).toEqual(['hello']);
    expect(splitMessage('   \n ', 10)).toEqual([]);
    expect(splitMessage('x'.repeat(10), 10)).toEqual(['x'.repeat(10)]);
  });

  test('at line breaks first, then at spaces, then hard', () => {
    expect(splitMessage('aaa bbb\nccc ddd\neee', 12)).toEqual(['aaa bbb', 'ccc ddd\neee']);
    expect(splitMessage('aaaa bbbb cccc dddd', 10)).toEqual(['aaaa bbbb', 'cccc dddd']);
    expect(splitMessage('abcdefghijklmnop', 5)).toEqual(['abcde', 'fghij', 'klmno', 'p']);
    expect(splitMessage('one\n\n\n\ntwo', 5)).toEqual(['one', 'two']);
  });

  test('never inside a surrogate pair', () => {
    const text = `a${'😀'.repeat(10)}`;
    const parts = splitMessage(text, 6);
    expect(parts).toEqual(['a😀😀', '😀😀😀', '😀😀😀', '😀😀']);
    expect(parts.join('')).toBe(text);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(6);
  });

  test('every part fits and the text survives (lines joined back)', () => {
    const lines = Array.from({ length: 500 }, (_, i) => `${i} ${'word '.repeat(i % 40)}`.trim());
    const parts = splitMessage(lines.join('\n'), 1000);
    expect(parts.every((p) => p.length <= 1000)).toBe(true);
    expect(parts.join('\n')).toBe(lines.join('\n'));
  });
});

describe('responder: cooldowns', () => {
  test('per rule, per user, per chat; told once per window', () => {
    let now = 1_000_000;
    const cooldowns = new Cooldowns(() => now);
    const spec = { user: 60_000, chat: 10_000 };
    expect(cooldowns.remaining('!x', spec, 'u1', 'c1')).toBe(0);
    cooldowns.hit('!x', spec, 'u1', 'c1');
    expect(cooldowns.remaining('!x', spec, 'u1', 'c1')).toBe(60_000);
    expect(cooldowns.remaining('!x', spec, 'u2', 'c1')).toBe(10_000);
    expect(cooldowns.remaining('!x', spec, 'u2', 'c2')).toBe(0);
    expect(cooldowns.remaining('!y', spec, 'u1', 'c1')).toBe(0);
    now += 30_000;
    expect(cooldowns.remaining('!x', spec, 'u1', 'c2')).toBe(30_000);
    expect(cooldowns.noticeDue('!x', 'u1', 30_000)).toBe(true);
    expect(cooldowns.noticeDue('!x', 'u1', 30_000)).toBe(false);
    now += 30_000;
    expect(cooldowns.remaining('!x', spec, 'u1', 'c1')).toBe(0);
    cooldowns.hit('!z', { rule: 5_000 }, 'u1', 'c1');
    expect(cooldowns.remaining('!z', { rule: 5_000 }, 'u9', 'c9')).toBe(5_000);
    expect(cooldowns.remaining('!z', undefined, 'u9', 'c9')).toBe(0);
  });
});

describe('responder: options', () => {
  const problems = (value: unknown) => (responderOptions.safeParse(value).error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);

  test('defaults: every built-in on, ten minutes for missed commands', () => {
    const options = responderOptions.parse({});
    expect(options).toMatchObject({ prefix: '!', max_age: 600_000, builtins: true, max_length: 10_000, time_zone: 'UTC', rules: [] });
    expect(Object.keys(builtinSpecs(options.builtins))).toEqual(['help', 'ping', 'topics', 'search', 'activity', 'close', 'reopen', 'subject', 'announce']);
    expect(builtinSpecs({ activity: false, ping: { allow: { users: ['7'] } } })).toMatchObject({ ping: { allow: { users: ['7'] } } });
    expect(builtinSpecs({ activity: false }).activity).toBeUndefined();
    expect(builtinSpecs(true).close!.allow).toEqual({ chat_owner: true, moderators: true });
  });

  test('durations, ids and rules are read as written', () => {
    const options = responderOptions.parse({
      max_age: '90s',
      moderators: { users: [12, '9007199254740993'] },
      rules: [{ command: 'x', cooldown: { user: 30, chat: '2m', rule: '500ms' }, reply: 'y' }],
    });
    expect(options.max_age).toBe(90_000);
    expect(options.moderators.users).toEqual(['12', '9007199254740993']);
    expect(options.rules[0]!.cooldown).toEqual({ user: 30_000, chat: 120_000, rule: 500 });
  });

  test('mistakes are reported at their key', () => {
    expect(problems({ rules: [{ reply: 'x' }] })).toEqual(['rules.0: a rule needs one of command, keyword or regex']);
    expect(problems({ rules: [{ command: 'a', keyword: 'b', reply: 'x' }] })).toEqual(['rules.0: a rule is one of command, keyword or regex, not command and keyword']);
    expect(problems({ rules: [{ keyword: 'a', flags: 'i', reply: 'x' }] })).toEqual(['rules.0.flags: flags is only for regex rules']);
    expect(problems({ rules: [{ regex: '(', reply: 'x' }] })[0]).toMatch(/^rules\.0\.regex: Invalid regular expression/);
    expect(problems({ rules: [{ command: 'a', reply: '{{args.b}}' }] })).toEqual(['rules.0.reply: {{args.b}}: the command has no argument b (it has: none)']);
    expect(problems({ rules: [{ command: 'a', reply: 'x' }, { command: 'A', reply: 'y' }] })).toEqual(['rules.1.command: command A is already rule 1']);
    expect(problems({ rules: [{ command: 'a', args: [{ name: 'r', type: 'rest' }, { name: 's' }], reply: 'x' }] })).toEqual(['rules.0.args: argument r is rest, so it must be the last']);
    expect(problems({ moderators: { users: [9007199254740993] } })[0]).toMatch(/must be quoted/);
    expect(problems({ max_age: '10 minutes' })[0]).toMatch(/^max_age: a duration/);
    expect(problems({ prefix: '' })).toEqual(['prefix: one to ten characters, no spaces']);
    expect(problems({ builtins: { pong: true } })[0]).toMatch(/pong/);
    expect(problems({ time_zone: 'Nowhere/Land' })[0]).toMatch(/^time_zone: not a time zone/);
  });
});

describe('responder: dates in answers', () => {
  test('UTC (the default, computed without Intl) reads as Intl reads a zone always at +00:00; other zones through Intl', () => {
    for (const iso of ['1999-12-31T23:59:59.999Z', '2026-03-29T00:59:30.000Z', '2026-11-27T00:00:00.500+00:00']) {
      expect(formatDate(iso, 'UTC'), iso).toBe(formatDate(iso, 'Africa/Abidjan'));
      expect(formatDate(iso, 'Etc/UTC'), iso).toBe(formatDate(iso, 'Africa/Abidjan'));
    }
    expect(formatDate('2026-03-29T00:59:30.000Z', 'UTC')).toBe('2026-03-29 00:59');
    expect(formatDate('2026-03-29T01:00:00.000Z', 'Europe/Berlin')).toBe('2026-03-29 03:00');
    expect(formatDate('not a date', 'UTC')).toBe('not a date');
    expect(isTimeZone('UTC') && isTimeZone('Etc/UTC') && isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('Nowhere/Land')).toBe(false);
  });
});
