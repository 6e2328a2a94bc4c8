import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { advance, lineHash, PositionStore, saidAfter, type CatchUpPosition } from '../plugins/relay-irc/catch-up-position.js';
import { chathistoryAfter, historyKind, IrcCatchUp } from '../plugins/relay-irc/catch-up.js';
import type { IrcChannelLine } from '../plugins/relay-irc/incoming.js';
import { lateChatText } from '../plugins/relay-irc/late-mark.js';
import { isOwnNick } from '../plugins/relay-irc/own-nick.js';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { chatOf, history, kill, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';
import { ZncBouncer } from './helpers/znc.js';

/**
 * Lines said on IRC while the bot was away (stopped with SIGTERM, killed with SIGKILL, killed again in
 * the middle of catching up) reach the chat once each, in order, marked with the time they were said,
 * and none of the bot's own lines come back: on InspIRCd with channel history (+H, replayed on join
 * with msgids and whole-second server-times), and through a ZNC bouncer in front of ngircd (its buffer
 * played back with millisecond server-times, no msgids; each playback holds the older lines too), each
 * server kind stopped with SIGTERM in one case and killed with SIGKILL, then again during the catch-up,
 * in another. On ngircd alone nothing can be caught up: the relay says so once at start, and the 20
 * lines said while it was stopped never reach the chat. Two people say 20 lines in each gap. Each case
 * prints its figures (`catch-up figures: …`: said while away, recovered, doubled, marked late).
 */

describe('catch-up positions (units)', () => {
  const at = (time: number, nick: string, text: string, msgid?: string) => ({ time, nick, text, ...(msgid ? { msgid } : {}) });

  test('after the position\'s msgid: every later line; without it: later server-times, and the same millisecond told apart by nick and text', () => {
    const replay = [at(1000, 'a', 'one', 'm1'), at(2000, 'b', 'two', 'm2'), at(3000, 'a', 'three', 'm3')];
    expect(saidAfter(replay, { msgid: 'm1', time: 1000 }).map((l) => l.text)).toEqual(['two', 'three']);
    const same = [at(1500, 'a', 'x'), at(1500, 'b', 'y'), at(1600, 'a', 'z')];
    const position = advance(undefined, same[0]!);
    expect(position).toEqual({ time: 1500, same: [lineHash(same[0]!)] });
    expect(saidAfter(same, position).map((l) => l.text)).toEqual(['y', 'z']);
    // The relay never saw the channel: its past is not relayed.
    expect(saidAfter(replay, undefined)).toEqual([]);
    // A replay of whole seconds (InspIRCd's +H) cannot order lines within the position's second: kept (their msgids dedupe).
    expect(saidAfter([at(5000, 'a', 'p', 'q1'), at(6000, 'b', 'r', 'q2')], { msgid: 'gone', time: 5400 }).map((l) => l.text)).toEqual(['p', 'r']);
  });

  test('which history a server offers, the CHATHISTORY request, the late mark', () => {
    const none = { supports: () => undefined };
    expect(historyKind({ ...none, caps: ['draft/chathistory'] })).toBe('chathistory');
    expect(historyKind({ ...none, caps: ['batch', 'znc.in/self-message'] })).toBe('bouncer');
    expect(historyKind({ caps: [], supports: (t) => (t === 'CHANMODES' ? 'b,k,Hl,imnpst' : undefined) })).toBe('replay-on-join');
    expect(historyKind({ caps: [], supports: (t) => (t === 'CHANMODES' ? 'beI,k,l,imMnOPQRstVz' : undefined) })).toBe('none');
    expect(chathistoryAfter('#g', { msgid: 'abc', time: 0 }, 100)).toBe('CHATHISTORY AFTER #g msgid=abc 100');
    expect(chathistoryAfter('#g', { time: Date.UTC(2026, 0, 2, 3, 4, 5, 6) }, 50)).toBe('CHATHISTORY AFTER #g timestamp=2026-01-02T03:04:05.006Z 50');
    const now = Date.UTC(2026, 10, 27, 16, 0);
    expect(lateChatText('<alice> hi', Date.UTC(2026, 10, 27, 14, 3), now)).toBe('[14:03 UTC] <alice> hi');
    expect(lateChatText('<alice> hi', Date.UTC(2026, 10, 26, 14, 3), now)).toBe('[2026-11-26 14:03 UTC] <alice> hi');
  });

  test('a live line moves the position to its msgid; a replay then brings only what came after it, late', () => {
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-catch-up-'));
    try {
      const delivered: Array<{ text: string; late: boolean; position?: CatchUpPosition }> = [];
      const catchUp = new IrcCatchUp({
        positions: new PositionStore(dir), log: pino({ level: 'silent' }), send: () => true,
        deliver: (line, late, position) => delivered.push({ text: line.text, late, ...(position ? { position } : {}) }),
      });
      const line = (text: string, time: number, msgid: string): IrcChannelLine => ({ kind: 'privmsg', nick: 'alice', ident: 'a', hostname: 'h', channel: '#g', text, time, tags: { msgid } });
      catchUp.onJoined('#g', 1_000);
      catchUp.onLive(line('live', 2_345, 'm1'));
      expect(delivered[0]).toMatchObject({ text: 'live', late: false, position: { msgid: 'm1', time: 2_345 } });
      // InspIRCd's replay: whole seconds; only what follows m1 is new.
      catchUp.onReplayed('#g', [line('older', 1_000, 'm0'), line('live', 2_000, 'm1'), line('said away', 2_000, 'm2')]);
      expect(delivered.slice(1).map((d) => [d.text, d.late])).toEqual([['said away', true]]);
      expect(new PositionStore(dir).get('#g')).toEqual({ time: 1_000, same: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('live lines said while CHATHISTORY is unanswered wait for the answer (those it brought go once), or for 15 s when none comes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'groupwire-catch-up-'));
    vi.useFakeTimers({ now: 10_000 });
    try {
      const delivered: Array<[string, boolean]> = [];
      const sent: string[] = [];
      const positions = new PositionStore(dir);
      positions.set('#g', { msgid: 'm0', time: 1_000 });
      const catchUp = new IrcCatchUp({
        positions, log: pino({ level: 'silent' }), send: (line) => sent.push(line) > 0,
        deliver: (line, late) => delivered.push([line.text, late]),
      });
      const line = (text: string, time: number, msgid: string): IrcChannelLine => ({ kind: 'privmsg', nick: 'alice', ident: 'a', hostname: 'h', channel: '#g', text, time, tags: { msgid } });
      catchUp.onRegistered({ caps: ['draft/chathistory'], supports: () => undefined });
      catchUp.onJoined('#g', 9_000);
      expect(sent).toEqual(['CHATHISTORY AFTER #g msgid=m0 100']);
      catchUp.onLive(line('live', 9_500, 'm3'));
      expect(delivered).toEqual([]);
      catchUp.onReplayed('#g', [line('away 1', 2_000, 'm1'), line('away 2', 3_000, 'm2'), line('live', 9_500, 'm3')]);
      catchUp.onLive(line('after', 9_600, 'm4'));
      expect(delivered).toEqual([['away 1', true], ['away 2', true], ['live', true], ['after', false]]);

      // A server that never answers: the held line goes on after 15 s.
      catchUp.onRegistered({ caps: ['draft/chathistory'], supports: () => undefined });
      catchUp.onJoined('#g', 9_700);
      catchUp.onLive(line('unanswered', 9_800, 'm5'));
      vi.advanceTimersByTime(14_999);
      expect(delivered).toHaveLength(4);
      vi.advanceTimersByTime(1);
      expect(delivered.at(-1)).toEqual(['unanswered', false]);
    } finally {
      vi.useRealTimers();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the relay\'s own lines in a replay: its nick now, the nick it asked for and its nick_ forms (an earlier connection)', () => {
    expect(['gwbot', 'GWBOT', 'gwbot_', 'gwbot__', 'gw1234'].map((nick) => isOwnNick(nick, 'gwbot', 'gw1234'))).toEqual([true, true, true, true, true]);
    expect(['gwbot_x', 'gwbo', 'alice', '_gwbot'].map((nick) => isOwnNick(nick, 'gwbot', 'gwbot'))).toEqual([false, false, false, false]);
  });
});

/** Lines two people say on IRC while the bot is away, in each case. */
const GAP_LINES = 20;
const BOB = '<B\u200bob M\u200bember>';
/** Lines said on IRC as the chat shows them: `nick: text`, with `late` when they carry the time mark. */
async function chatLines(env: Env): Promise<Array<{ said: string; late: boolean }>> {
  const carol = env.client('carol');
  const messages = await history(carol, (await chatOf(carol, 'general'))!.id);
  return messages.flatMap((m) => {
    const line = /^(\[[^\]]+ UTC\] )?<([^>]+)> (.*)$/.exec(m.message);
    return line ? [{ said: `${line[2]}: ${line[3]}`, late: line[1] !== undefined }] : [];
  });
}

/** Two people say `count` lines in turns: `alice: <tag> 1`, `dave: <tag> 2`, ... */
async function sayInTurns(alice: IrcWatcher, dave: IrcWatcher, tag: string, count: number): Promise<string[]> {
  const said: string[] = [];
  for (let n = 1; n <= count; n += 1) {
    const who = n % 2 === 1 ? alice : dave;
    const other = who === alice ? dave : alice;
    who.send(`PRIVMSG #general :${tag} ${n}`);
    said.push(`${who.nick}: ${tag} ${n}`);
    // Each in turn, as people talk: the next speaker has seen the line before answering.
    await other.waitForLine(new RegExp(`^:${who.nick}!\\S+ PRIVMSG #general :${tag} ${n}$`), 5000);
  }
  return said;
}

function expectOnceInOrder(lines: Array<{ said: string; late: boolean }>, expected: string[]): void {
  const seen = lines.map((l) => l.said);
  expect(seen.filter((said) => expected.includes(said))).toEqual(expected);
  // The bot's own lines (relayed from the chat) never come back into it.
  expect(seen.filter((said) => said.startsWith('gwbot'))).toEqual([]);
}

/**
 * A case's figures for the closing note (lines said while away, recovered, per server kind),
 * printed: what is required of them is asserted before each call.
 */
function reportFigures(kind: string, gap: string[], lines: Array<{ said: string; late: boolean }>): void {
  const recovered = lines.filter((l) => gap.includes(l.said));
  const once = new Set(recovered.map((l) => l.said)).size;
  process.stdout.write(`catch-up figures: ${kind}: ${gap.length} lines said on IRC while away, ${once} recovered, `
    + `${recovered.length - once} doubled, ${recovered.filter((l) => l.late).length} marked late\n`);
}

describe('relay-irc catch-up on inspircd with +H', () => {
  let server: IrcServer;
  let env: Env;
  let alice: IrcWatcher;
  let dave: IrcWatcher;
  let bot: ChildProcess | undefined;
  const joins = () => alice.lines.filter((line) => /^:gwbot!\S+ JOIN/i.test(line)).length;

  beforeAll(async () => {
    server = await IrcServer.start({ kind: 'inspircd', history: true });
    alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
    dave = await IrcWatcher.connect(server.port, 'dave', ['#general']);
    alice.send('MODE #general +H 200:1h');
    await alice.waitForLine(/ MODE #general \+H/);
    env = await makeEnv([]);
    // Relayed lines posted 8 a second: the catch-up takes a few seconds, and the second kill lands inside it.
    env.writeConfig([{ chats: [{ chat: 'general' }], reply_rate: { per_second: 8, burst: 1 }, plugins: [relayPlugin(server)] }]);
  }, 30_000);

  afterAll(async () => {
    alice?.close();
    dave?.close();
    await env?.close();
    await server?.close();
  });

  async function startBot(): Promise<void> {
    const before = joins();
    bot = await env.spawn();
    await waitFor('the relay in the channel', () => joins() > before);
  }

  test('stopped (SIGTERM): what two people said meanwhile reaches the chat once, in order, marked late', { timeout: 40_000 }, async () => {
    await startBot();
    alice.send('PRIVMSG #general :before');
    await post(env.svc, 'general', 'bob', 'from the chat');
    await waitFor('the chat\'s line on IRC', () => alice.texts('#general', 'gwbot').includes(`${BOB} from the chat`));
    await waitFor('the first line in the chat', async () => (await chatLines(env)).some((l) => l.said === 'alice: before'));

    await kill(bot!, 'SIGTERM');
    await alice.waitForLine(/^:gwbot!\S+ QUIT/);
    const gap = await sayInTurns(alice, dave, 'gap one', GAP_LINES);
    await startBot();
    await waitFor('every line in the chat', async () => (await chatLines(env)).some((l) => l.said === gap.at(-1)));
    // What came after them is relayed live, after them.
    alice.send('PRIVMSG #general :live again');
    await waitFor('the live line', async () => (await chatLines(env)).some((l) => l.said === 'alice: live again'));
    const lines = await chatLines(env);
    expectOnceInOrder(lines, ['alice: before', ...gap, 'alice: live again']);
    expect(lines.filter((l) => gap.includes(l.said)).every((l) => l.late)).toBe(true);
    expect(lines.find((l) => l.said === 'alice: live again')?.late).toBe(false);
    reportFigures('inspircd +H, SIGTERM', gap, lines);
  });

  test('killed (SIGKILL), then killed again while catching up: each line once, in order', { timeout: 40_000 }, async () => {
    await kill(bot!, 'SIGKILL');
    await post(env.svc, 'general', 'bob', 'said in the chat while the bot is down');
    const gap = await sayInTurns(alice, dave, 'gap two', GAP_LINES);
    await startBot();
    // Killed again as soon as the catch-up has begun to reach the chat.
    await waitFor('the catch-up begun', async () => (await chatLines(env)).some((l) => l.said === gap[0]), 20_000);
    await kill(bot!, 'SIGKILL');
    const caughtUpBeforeTheKill = (await chatLines(env)).filter((l) => gap.includes(l.said)).length;
    expect(caughtUpBeforeTheKill).toBeLessThan(gap.length);
    await startBot();
    await waitFor('every line in the chat', async () => (await chatLines(env)).some((l) => l.said === gap.at(-1)));
    await waitFor('the chat\'s line on IRC', () => alice.texts('#general', 'gwbot').includes(`${BOB} said in the chat while the bot is down`));
    alice.send('PRIVMSG #general :live at last');
    await waitFor('the live line', async () => (await chatLines(env)).some((l) => l.said === 'alice: live at last'));
    const lines = await chatLines(env);
    expectOnceInOrder(lines, ['alice: before', ...lines.filter((l) => l.said.includes('gap one')).map((l) => l.said), ...gap, 'alice: live at last']);
    reportFigures(`inspircd +H, SIGKILL and a second SIGKILL after ${caughtUpBeforeTheKill} caught up`, gap, lines);
    await kill(bot!, 'SIGTERM');
  });
});

describe('relay-irc catch-up through a ZNC bouncer in front of ngircd', () => {
  let server: IrcServer;
  let znc: ZncBouncer;
  let env: Env;
  let alice: IrcWatcher;
  let dave: IrcWatcher;
  let bot: ChildProcess | undefined;

  beforeAll(async () => {
    server = await IrcServer.start({ kind: 'ngircd' });
    alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
    dave = await IrcWatcher.connect(server.port, 'dave', ['#general']);
    znc = await ZncBouncer.start(server.port, ['#general']);
    await alice.waitForLine(/^:gwbot!\S+ JOIN/i, 15_000);
    env = await makeEnv([]);
    // Relayed lines posted 8 a second, as on inspircd: the second kill lands inside the catch-up.
    env.writeConfig([{
      chats: [{ chat: 'general' }], reply_rate: { per_second: 8, burst: 1 },
      plugins: [{ ...relayPlugin(server), with: { ...relayPlugin(server).with, port: znc.port, password: znc.password } }],
    }]);
  }, 30_000);

  afterAll(async () => {
    alice?.close();
    dave?.close();
    await env?.close();
    await znc?.close();
    await server?.close();
  });

  test('stopped (SIGTERM): the buffer played back on reattach brings what was said meanwhile, once, in order, late; its replay of older lines does not double them', { timeout: 40_000 }, async () => {
    bot = await env.spawn();
    // The relay is attached to the bouncer once the chat's line comes out of it (a JOIN would not show: ZNC stays in the channel).
    await post(env.svc, 'general', 'bob', 'from the chat');
    await waitFor('the chat\'s line on IRC', () => alice.texts('#general', 'gwbot').includes(`${BOB} from the chat`));
    alice.send('PRIVMSG #general :before');
    await waitFor('the first line in the chat', async () => (await chatLines(env)).some((l) => l.said === 'alice: before'));
    // Said live: the buffer keeps it too and plays it back after the stop; it must not come twice.
    dave.send('PRIVMSG #general :live before the stop');
    await waitFor('the live line in the chat', async () => (await chatLines(env)).some((l) => l.said === 'dave: live before the stop'));

    await kill(bot, 'SIGTERM');
    const gap = await sayInTurns(alice, dave, 'stopped', GAP_LINES);
    bot = await env.spawn();
    await waitFor('every line in the chat', async () => (await chatLines(env)).some((l) => l.said === gap.at(-1)));
    alice.send('PRIVMSG #general :live after the stop');
    await waitFor('the live line', async () => (await chatLines(env)).some((l) => l.said === 'alice: live after the stop'));
    const lines = await chatLines(env);
    expectOnceInOrder(lines, ['alice: before', 'dave: live before the stop', ...gap, 'alice: live after the stop']);
    expect(lines.filter((l) => gap.includes(l.said)).every((l) => l.late)).toBe(true);
    expect(lines.find((l) => l.said === 'alice: live after the stop')?.late).toBe(false);
    reportFigures('ZNC in front of ngircd, SIGTERM', gap, lines);
  });

  test('killed (SIGKILL), then killed again while the buffer is caught up: each line once, in order, the older buffer not doubled', { timeout: 40_000 }, async () => {
    await kill(bot!, 'SIGKILL');
    await post(env.svc, 'general', 'bob', 'said in the chat while the bot is down');
    const gap = await sayInTurns(alice, dave, 'killed', GAP_LINES);
    bot = await env.spawn();
    // Killed again a few lines into the catch-up: those taken come again in the next playback, to be left out.
    await waitFor('the catch-up a few lines in', async () => (await chatLines(env)).some((l) => l.said === gap[4]), 20_000);
    await kill(bot, 'SIGKILL');
    const beforeTheSecondKill = (await chatLines(env)).filter((l) => gap.includes(l.said)).length;
    expect(beforeTheSecondKill).toBeLessThan(gap.length);
    bot = await env.spawn();
    await waitFor('every line in the chat', async () => (await chatLines(env)).some((l) => l.said === gap.at(-1)));
    await waitFor('the chat\'s line on IRC', () => alice.texts('#general', 'gwbot').includes(`${BOB} said in the chat while the bot is down`));
    alice.send('PRIVMSG #general :live at last');
    await waitFor('the live line', async () => (await chatLines(env)).some((l) => l.said === 'alice: live at last'));
    const lines = await chatLines(env);
    const earlier = lines.filter((l) => /^(alice|dave): (before|live before the stop|stopped \d+|live after the stop)$/.test(l.said)).map((l) => l.said);
    expect(earlier).toHaveLength(23);
    expectOnceInOrder(lines, [...earlier, ...gap, 'alice: live at last']);
    expect(lines.filter((l) => gap.includes(l.said)).every((l) => l.late)).toBe(true);
    reportFigures(`ZNC in front of ngircd, SIGKILL and a second SIGKILL after ${beforeTheSecondKill} caught up`, gap, lines);
    await kill(bot, 'SIGTERM');
  });
});

describe('relay-irc on ngircd alone', () => {
  let server: IrcServer;
  let env: Env;

  afterAll(async () => {
    await env?.close();
    await server?.close();
  });

  test('nothing can be caught up: said once at start, after connecting; the lines said while the bot was stopped never reach the chat', { timeout: 30_000 }, async () => {
    server = await IrcServer.start({ kind: 'ngircd' });
    const alice = await IrcWatcher.connect(server.port, 'alice', ['#general']);
    const dave = await IrcWatcher.connect(server.port, 'dave', ['#general']);
    try {
      env = await makeEnv([]);
      env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(server)] }]);
      await env.start();
      await alice.waitForLine(/^:gwbot!\S+ JOIN/i);
      const said = () => env.log.lines.filter((line) => /keeps no history the relay can read.*are lost/.test(String(line.msg)));
      await waitFor('the log line', () => said().length === 1);
      expect(said()[0]!.level).toBe(40);

      await env.supervisor!.stop(5_000);
      await alice.waitForLine(/^:gwbot!\S+ QUIT/);
      const gap = await sayInTurns(alice, dave, 'lost', GAP_LINES);
      await env.start();
      alice.send('PRIVMSG #general :live again');
      await waitFor('the live line', async () => (await chatLines(env)).some((l) => l.said === 'alice: live again'));
      const lines = (await chatLines(env)).map((l) => l.said);
      // Nothing recovered: ngircd keeps no history, and the relay, which was not in the channel, never saw them.
      expect(lines.filter((said) => gap.includes(said))).toEqual([]);
      expect(lines).toEqual(['alice: live again']);
      reportFigures('ngircd alone, stopped', gap, lines.map((said) => ({ said, late: false })));
    } finally {
      alice.close();
      dave.close();
    }
  });
});
