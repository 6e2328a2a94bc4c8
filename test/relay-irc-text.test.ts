import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { IrcMessage } from 'irc-framework';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { loadPlugins } from '../src/config/plugin-loader.js';
import { ConfigError } from '../src/config/yaml-source.js';
import { DeliveryTracker } from '../plugins/relay-irc/delivery.js';
import { chatToIrcLines, ircToChatText, textRoom } from '../plugins/relay-irc/format.js';
import { nextNick } from '../plugins/relay-irc/nick-keeper.js';
import { antiPing, guardCommandLine, safeLine, splitUtf8, stripIrcFormatting, utf8Bytes } from '../plugins/relay-irc/irc-text.js';
import { markupToText } from '../plugins/relay-irc/markup.js';
import { relayOptions } from '../plugins/relay-irc/options.js';
import { Routes } from '../plugins/relay-irc/routes.js';
import { UNPACED } from '../plugins/relay-irc/timing.js';

/** The relay's pure parts: text at the IRC boundary, formats, options, routes, delivery bookkeeping. */

const ZW = '\u200b';

describe('relay-irc text', () => {
  test('IRC colour and formatting codes are stripped, text and digits after them kept', () => {
    expect(stripIrcFormatting('\x0304red\x03 \x0304,12on blue\x03 \x031,2x\x03 \x02b\x02\x1di\x1d\x1fu\x1f\x16r\x16\x11m\x11\x1es\x1e\x0f \x04ff00aahex\x04 \x0399 99')).toBe('red on blue x biurms hex  99');
    expect(stripIrcFormatting('\x03,5 comma stays')).toBe(',5 comma stays');
  });

  test('safeLine removes every control character (CR, LF, NUL, CTCP, DEL, C1) and makes tabs spaces', () => {
    expect(safeLine('a\rb\nc\0d\x01e\x07f\x7fg\x85h\x9bi\tj  ')).toBe('abcdefghi j');
  });

  test('guardCommandLine: CR, LF and NUL can never stay in a command line', () => {
    expect(guardCommandLine('PRIVMSG #a :x\r\nQUIT\0')).toEqual({ line: 'PRIVMSG #a :x  QUIT ', changed: true });
    expect(guardCommandLine('PRIVMSG #a :fine')).toEqual({ line: 'PRIVMSG #a :fine', changed: false });
  });

  test('antiPing puts a zero-width space after the first character of each word, emoji kept whole', () => {
    expect(antiPing('Carol Member')).toBe(`C${ZW}arol M${ZW}ember`);
    expect(antiPing('X')).toBe('X');
    expect(antiPing('👍🏽bob')).toBe(`👍🏽${ZW}bob`);
    expect(antiPing('Ünïcode')).toBe(`Ü${ZW}nïcode`);
  });

  test('splitUtf8 keeps every piece within the limit, breaks at spaces, never inside a character or grapheme', () => {
    const family = '👨‍👩‍👧‍👦';
    const samples = [
      'short',
      `${'ab '.repeat(100)}end`,
      'x'.repeat(1000),
      '€'.repeat(333) + 'ü',
      `${family} `.repeat(40),
      'mixed: 日本語のテキスト, ελληνικά, עברית, and emoji 🎉🎉🎉 '.repeat(12),
    ];
    for (const max of [40, 100, 397]) {
      for (const text of samples) {
        const pieces = splitUtf8(text, max);
        for (const piece of pieces) {
          expect(utf8Bytes(piece)).toBeLessThanOrEqual(max);
          expect(piece).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
          expect(piece.startsWith(' ') || piece.endsWith(' ')).toBe(false);
        }
        expect(pieces.join('').replace(/ /g, '')).toBe(text.replace(/ /g, ''));
        expect(pieces.join(' ').split(family).length).toBe(text.split(family).length);
      }
    }
    expect(splitUtf8('aaaa bbbb cccc', 10)).toEqual(['aaaa bbbb', 'cccc']);
  });
});

describe('relay-irc formats', () => {
  const format = { template: '{prefix}<{name}> {text}', antiPing: true, roomBytes: textRoom('gwbot', '#general', 400), maxLines: 0 };

  test('a chat message: markup reduced, one line per line, every line attributed, blank lines left out', () => {
    expect(chatToIrcLines({ message: 'one\n\n two\r\nthree', display_name: 'Carol Member' }, '', format))
      .toEqual([`<C${ZW}arol M${ZW}ember> one`, `<C${ZW}arol M${ZW}ember>  two`, `<C${ZW}arol M${ZW}ember> three`]);
    expect(chatToIrcLines({ message: 'hi', display_name: '', user_name: 'bob' }, '[general]', { ...format, antiPing: false })).toEqual(['[general] <bob> hi']);
    expect(chatToIrcLines({ message: ' \n\t\n', display_name: 'A' }, '', format)).toEqual([]);
    // A name cannot smuggle a line break or a token either.
    expect(chatToIrcLines({ message: '{name}', display_name: 'Eve\r\nQUIT {text}' }, '', { ...format, antiPing: false })).toEqual(['<Eve QUIT {text}> {name}']);
  });

  test('long messages leave room for the name; max_lines_per_message cuts with a visible note', () => {
    const lines = chatToIrcLines({ message: 'word '.repeat(300), display_name: 'Bob' }, '', format);
    for (const line of lines) expect(utf8Bytes(line)).toBeLessThanOrEqual(format.roomBytes);
    expect(chatToIrcLines({ message: 'a\nb\nc\nd', display_name: 'Bob' }, '', { ...format, antiPing: false, maxLines: 3 }))
      .toEqual(['<Bob> a', '<Bob> b', '<Bob> [… 2 more lines not relayed]']);
  });

  test('HTML becomes text; text that only looks like markup is left alone', () => {
    expect(markupToText('<p>Hi <b>there</b> &amp; <a href="https://e.x/a?b=1&amp;c=2">docs</a></p><ul><li>one</li><li>two</li></ul><img src="https://e.x/i.png" alt="pic">'))
      .toBe('Hi there & docs (https://e.x/a?b=1&c=2)\n\n• one\n• two\n[pic] (https://e.x/i.png)');
    expect(markupToText('<a href="https://e.x">https://e.x</a>')).toBe('https://e.x');
    expect(markupToText('<pre>a\n  b</pre>')).toBe('a\n  b');
    expect(markupToText('I <3 this, a < b, <bob> said &amp;')).toBe('I <3 this, a < b, <bob> said &amp;');
  });

  test('IRC to chat: formats, codes stripped, nothing left means nothing posted', () => {
    const toChat = { privmsg: '<{nick}> {text}', action: '* {nick} {text}' };
    expect(ircToChatText('privmsg', 'alice', '#g', '\x02hi\x02 {nick}', toChat)).toBe('<alice> hi {nick}');
    expect(ircToChatText('action', 'alice', '#g', 'waves', toChat)).toBe('* alice waves');
    expect(ircToChatText('privmsg', 'alice', '#g', '\x0304\x03 ', toChat)).toBeUndefined();
  });
});

describe('relay-irc options and routes', () => {
  const minimal = { server: '127.0.0.1', port: 6667, tls: false, nick: 'gwbot', channels: { general: '#general' } };

  test('the minimal example parses, with safe defaults', () => {
    const options = relayOptions.parse(minimal);
    expect(options).toMatchObject({ tls: false, tls_verify: true, rate: { lines_per_second: 1, burst: 4 }, anti_ping: true, queue: { max_lines: 10_000 } });
    expect(options.formats).toEqual({ to_irc: '{prefix}<{name}> {text}', to_chat: '<{nick}> {text}', to_chat_action: '* {nick} {text}' });
    expect(relayOptions.parse({ server: 'irc.example.net', nick: 'gw', channels: { c: '#c' } }).tls).toBe(true);
    // The channels may come from bots.yaml's `gateways:` alone.
    expect(relayOptions.parse({ server: 'irc.example.net', nick: 'gw' }).channels).toEqual({});
  });

  test('nothing that would break a command line gets through the options', () => {
    const bad = [
      { channels: { general: '#gen eral' } }, { channels: { general: 'general' } }, { channels: { general: '#a,#b' } },
      { nick: '9lives' }, { nick: 'gw bot' }, { realname: 'a\r\nQUIT' }, { password: 'x\ny' },
      { formats: { to_irc: '<{name}>' } }, { formats: { to_chat: '{nick} {text} {oops}' } }, { channels: { general: { channel: '#g', key: 'a b' } } },
    ];
    for (const change of bad) expect(relayOptions.safeParse({ ...minimal, ...change }).success, JSON.stringify(change)).toBe(false);
  });

  test('option mistakes are reported where they are in bots.yaml', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-relay-config-'));
    try {
      const file = join(dir, 'bots.yaml');
      writeFileSync(file, ['service:', '  base_url: embedded', 'bots:', '  - name: a', '    login: { email: bot@example.com, password: pw }',
        '    chats: [{ group: g, chat: general }]', '    plugins:', '      - use: relay-irc',
        '        with: { server: 127.0.0.1, port: 6667, tls: false, nick: gwbot, channels: { general: "general" } }'].join('\n'));
      const error = await loadPlugins(await loadBotsConfig(file, {}), 0).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^.*bots\.yaml:9:\d+: expected an IRC channel name .*\(at bots\.0\.plugins\.0\.with\.channels\.general\)$/)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('rate: off turns pacing off; a rate that is neither off nor a bucket is refused, saying what is expected', async () => {
    expect(relayOptions.parse({ ...minimal, rate: 'off' }).rate).toBe('off');
    expect(relayOptions.parse({ ...minimal, rate: { lines_per_second: 1000 } }).rate).toEqual({ lines_per_second: 1000, burst: 4 });
    const problems = (rate: unknown) => (relayOptions.safeParse({ ...minimal, rate }).error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);
    expect(problems('fast')).toEqual(['rate: expected off or { lines_per_second, burst }']);
    expect(problems(false)).toEqual(['rate: expected off or { lines_per_second, burst }']);
    expect(problems({ lines_per_second: 5000 })).toEqual(['rate.lines_per_second: Too big: expected number to be <=1000']);
    // Unpaced, every command may go at once; only a stop holds it back.
    expect(await Promise.all([UNPACED.take(), UNPACED.take(), UNPACED.take()])).toEqual([true, true, true]);
    expect(await UNPACED.take(AbortSignal.abort())).toBe(false);
  });

  test('several chats in one channel get a prefix each; directions become the gateways\' in, out and inout', () => {
    const routes = new Routes({ general: '#Lobby', random: '#lobby', news: { channel: '#LOBBY', direction: 'to_irc', prefix: '' }, ops: { channel: '#ops', direction: 'to_chat', key: 'k' } });
    expect(routes.forChat({ id: '1', subject: 'general' }).map((r) => r.prefix)).toEqual(['[general]']);
    expect(routes.forChat({ id: '2', subject: 'news' }).map((r) => r.prefix)).toEqual(['']);
    expect(routes.forChat({ id: '3', subject: 'ops' })).toEqual([]);
    // By subject or by id; a pair the options do not map has no prefix.
    expect(routes.prefixFor({ id: '7', subject: 'random' }, '#lobby')).toBe('[random]');
    expect(routes.prefixFor({ id: 'general', subject: 'renamed' }, '#lobby')).toBe('[general]');
    expect(routes.prefixFor({ id: '1', subject: 'general' }, '#elsewhere')).toBe('');
    expect(routes.pairs()).toEqual([
      { chat: 'general', channel: '#Lobby', direction: 'inout' }, { chat: 'random', channel: '#lobby', direction: 'inout' },
      { chat: 'news', channel: '#LOBBY', direction: 'out' }, { chat: 'ops', channel: '#ops', direction: 'in' },
    ]);
    expect(routes.channels().map((c) => c.name)).toEqual(['#Lobby', '#ops']);
    // The gateways' channels join the routes' ones, once each, keys from the routes.
    expect(routes.channels(['#OPS', '#new'])).toEqual([
      { name: '#Lobby', key: '#lobby', joinKey: undefined }, { name: '#ops', key: '#ops', joinKey: 'k' }, { name: '#new', key: '#new', joinKey: undefined },
    ]);
  });

  test('a taken nick: one more "_", or digits at the end when that would be too long', () => {
    expect(nextNick('gwbot', 30)).toBe('gwbot_');
    expect(nextNick('abcdefghi', 9)).toMatch(/^abcdef\d{3}$/);
  });
});

describe('relay-irc delivery bookkeeping', () => {
  const message = (command: string, params: string[], tags: Record<string, string> = {}): IrcMessage =>
    ({ command, params, tags, prefix: '', nick: '', ident: '', hostname: '' });
  const record = () => {
    const events: string[] = [];
    const tracker = new DeliveryTracker({
      delivered: (t) => events.push(`delivered ${t}`),
      deliveredUpTo: (t) => events.push(`up to ${t}`),
      refused: (where, reason) => events.push(`refused ${where.ticket ?? where.channelKey} ${reason}`),
    });
    return { tracker, events };
  };
  const labelOf = (command: string) => /^@label=(\S+) /.exec(command)![1]!;

  test('labeled: an echo delivers, a labeled error refuses, a batch decides by what it holds, stale labels are ignored', () => {
    const { tracker, events } = record();
    tracker.reset('labeled');
    const a = tracker.line('#g', 'a');
    const b = tracker.line('#g', 'b');
    const c = tracker.line('#g', 'c');
    expect(a.command).toMatch(/^@label=\S+ PRIVMSG #g :a$/);
    tracker.onMessage(message('PRIVMSG', ['#g', 'a'], { label: labelOf(a.command) }));
    tracker.onMessage(message('404', ['gwbot', '#g', 'Cannot send to channel'], { label: labelOf(b.command) }));
    tracker.onMessage(message('BATCH', ['+x', 'labeled-response'], { label: labelOf(c.command) }));
    tracker.onMessage(message('PRIVMSG', ['#g', 'c'], { batch: 'x' }));
    tracker.onMessage(message('BATCH', ['-x']));
    const d = tracker.line('#g', 'd');
    tracker.reset('labeled');
    tracker.onMessage(message('PRIVMSG', ['#g', 'd'], { label: labelOf(d.command) }));
    expect(events).toEqual([`delivered ${a.ticket}`, `refused ${b.ticket} 404 #g Cannot send to channel`, `delivered ${c.ticket}`]);
  });

  test('barrier: a PING after the lines, its PONG confirms them; a refusal names the channel', () => {
    const { tracker, events } = record();
    tracker.reset('barrier');
    const a = tracker.line('#g', 'a');
    expect(a.command).toBe('PRIVMSG #g :a');
    expect(tracker.barrierDue(10, false)).toBe('none');
    expect(tracker.barrierDue(10, true)).toBe('paced');
    const ping = tracker.barrier();
    expect(tracker.barrierDue(10, true)).toBe('none');
    tracker.onMessage(message('404', ['gwbot', '#G', 'Cannot send to channel']));
    tracker.onMessage(message('PONG', ['irc.test', ping.slice('PING :'.length)]));
    tracker.onMessage(message('PONG', ['irc.test', 'someone else\'s token']));
    expect(events).toEqual(['refused #g 404 #G Cannot send to channel', `up to ${a.ticket}`]);
  });
});
