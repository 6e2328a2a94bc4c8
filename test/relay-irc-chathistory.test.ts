import { afterAll, expect, test } from 'vitest';
import { ScriptedIrcServer, type Send } from './helpers/scripted-irc-server.js';
import { chatOf, history, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * IRCv3 `draft/chathistory`, which no IRC server in Debian offers (Ergo, UnrealIRCd 6 and soju do): a
 * tiny scripted server, not a real one. It speaks just enough IRC for the relay (CAP, registration,
 * ISUPPORT `CHATHISTORY=`, JOIN with server-time, PING) and answers `CHATHISTORY AFTER #chan
 * timestamp=…|msgid=… <limit>` from a list of lines, in a `chathistory` batch, at most `limit` at a
 * time, as the specification has it. What is checked is the relay's side: it asks from where it last
 * was, pages on when a page is full, and relays each line once, in order, marked late.
 */

interface Line { time: number; msgid: string; nick: string; text: string }

class ScriptedServer extends ScriptedIrcServer {
  readonly lines: Line[] = [];
  readonly requests: string[] = [];
  /** Said in the channel (and sent live to the relay) as the next CHATHISTORY request comes in, before its answer. */
  liveBeforeAnswer: { nick: string; text: string } | undefined;

  constructor(private readonly pageLimit: number) {
    super({ caps: 'batch server-time message-tags draft/chathistory', isupport: `CHATHISTORY=${pageLimit}`, serverTime: true });
  }

  say(nick: string, text: string): void {
    const time = Date.now() + this.lines.length;
    this.lines.push({ time, msgid: `m${this.lines.length + 1}`, nick, text });
  }

  protected command(command: string, params: string[], _line: string, send: Send): boolean {
    if (command !== 'CHATHISTORY') return false;
    this.answer(params, send, (time) => `@time=${new Date(time).toISOString()}`);
    return true;
  }

  private answer(params: string[], send: (line: string) => void, at: (time: number) => string): void {
    this.requests.push(params.join(' '));
    const [sub, target, from = '', limit = '0'] = params;
    if (sub !== 'AFTER') return;
    // Someone speaks while the server is still to answer: the relay gets the line live first.
    const live = this.liveBeforeAnswer;
    this.liveBeforeAnswer = undefined;
    if (live) {
      this.say(live.nick, live.text);
      const line = this.lines.at(-1)!;
      send(`${at(line.time)};msgid=${line.msgid} :${line.nick}!${line.nick}@127.0.0.1 PRIVMSG ${target} :${line.text}`);
    }
    const [kind, value = ''] = from.split('=');
    const start = kind === 'msgid' ? this.lines.findIndex((l) => l.msgid === value) + 1 : this.lines.findIndex((l) => l.time > Date.parse(value));
    const page = start < 0 ? [] : this.lines.slice(start, start + Math.min(Number(limit), this.pageLimit));
    send(`:irc.test BATCH +h1 chathistory ${target}`);
    for (const line of page) send(`${at(line.time)};msgid=${line.msgid};batch=h1 :${line.nick}!${line.nick}@127.0.0.1 PRIVMSG ${target} :${line.text}`);
    send(':irc.test BATCH -h1');
  }
}

let env: Env | undefined;
let server: ScriptedServer | undefined;

afterAll(async () => {
  await env?.close();
  await server?.close();
});

test('a scripted draft/chathistory server: the relay asks CHATHISTORY AFTER its position, page by page, and relays each line once, in order, late', { timeout: 30_000 }, async () => {
  server = new ScriptedServer(4);
  await server.listen();
  env = await makeEnv([]);
  env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'relay-irc', with: {
    server: '127.0.0.1', port: server.port, tls: false, nick: 'gwbot', channels: { general: '#general' }, rate: 'off',
  } }] }]);
  await env.start();
  const log = () => env!.log.lines.map((line) => String(line.msg));
  await waitFor('the first join', () => server!.requests.length === 1 && log().some((msg) => /caught up from CHATHISTORY/.test(msg)));
  await env.supervisor!.stop();
  server.requests.length = 0;

  // Said while the relay was away: two people, and a line of the relay's own (never relayed back).
  for (let n = 1; n <= 9; n += 1) server.say(n === 5 ? 'gwbot' : n % 2 === 1 ? 'alice' : 'dave', `away ${n}`);
  await env.start();
  const carol = env.client('carol');
  const texts = async () => (await history(carol, (await chatOf(carol, 'general'))!.id)).map((m) => m.message);
  await waitFor('the last line in the chat', async () => (await texts()).some((text) => text.endsWith('<alice> away 9')));
  const said = (await texts()).map((text) => /^\[\d\d:\d\d UTC\] <(\w+)> (away \d)$/.exec(text)).filter((m) => m !== null).map((m) => `${m[1]}: ${m[2]}`);
  expect(said).toEqual(['alice: away 1', 'dave: away 2', 'alice: away 3', 'dave: away 4', 'dave: away 6', 'alice: away 7', 'dave: away 8', 'alice: away 9']);
  // From the position (the first join's time), then after the last line of each full page.
  expect(server.requests[0]).toMatch(/^AFTER #general timestamp=\S+Z 4$/);
  expect(server.requests.slice(1)).toEqual(['AFTER #general msgid=m4 4', 'AFTER #general msgid=m8 4']);
  // The figures for the closing note (asserted above).
  process.stdout.write(`catch-up figures: scripted draft/chathistory server, stopped: 9 lines said on IRC while away (8 by people, 1 the relay's own), ${said.length} recovered, ${said.length - new Set(said).size} doubled, in ${server.requests.length} CHATHISTORY requests\n`);
});

test('a line said live while the server is still to answer CHATHISTORY: the lines said while away still come, once, in order, before it', { timeout: 30_000 }, async () => {
  const scripted = new ScriptedServer(100);
  await scripted.listen();
  const own = await makeEnv([]);
  try {
    own.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: 'relay-irc', with: {
      server: '127.0.0.1', port: scripted.port, tls: false, nick: 'gwbot', channels: { general: '#general' }, rate: 'off',
    } }] }]);
    await own.start();
    await waitFor('the first join', () => scripted.requests.length === 1);
    await own.supervisor!.stop();
    for (let n = 1; n <= 6; n += 1) scripted.say(n % 2 === 1 ? 'alice' : 'dave', `away ${n}`);
    scripted.liveBeforeAnswer = { nick: 'dave', text: 'live during the catch-up' };
    await own.start();
    const carol = own.client('carol');
    const said = async () => (await history(carol, (await chatOf(carol, 'general'))!.id))
      .map((m) => /<(\w+)> (.*)$/.exec(m.message)).filter((m) => m !== null).map((m) => `${m[1]}: ${m[2]}`);
    await waitFor('the live line in the chat', async () => (await said()).includes('dave: live during the catch-up'));
    // Every line once, in the order they were said: those said away, then the live one (lines reach the chat in order, so all are in by now).
    const expected = [...[1, 2, 3, 4, 5, 6].map((n) => `${n % 2 === 1 ? 'alice' : 'dave'}: away ${n}`), 'dave: live during the catch-up'];
    expect(await said()).toEqual(expected);
    process.stdout.write(`catch-up figures: scripted draft/chathistory server, a live line before the answer: 6 lines said on IRC while away, ${(await said()).filter((line) => line.includes(': away ')).length} recovered\n`);
  } finally {
    await own.close();
    await scripted.close();
  }
});
