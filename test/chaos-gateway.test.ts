import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { FakeSlack, rendered, TOKENS } from './fakes/slack/index.js';
import { AdminLink, chaosSeed, IrcAudience, PostGate, seededRandom } from './helpers/chaos.js';
import {
  describeTally, planGatewayFaults, planLines, SIDES, tagOf, tagsIn, tally, type Burst, type GatewayFault, type Line, type Reconnection, type Side, type TimedGatewayFault,
} from './helpers/chaos-gateway.js';
import { ChatLog, IrcPeople, SlackPeople } from './helpers/chaos-sides.js';
import { IrcServer, relayPlugin } from './helpers/irc-server.js';
import type { DemoUser } from './helpers/service.js';
import { chatOf, kill, makeEnv, waitFor, type Env } from './helpers/supervisor.js';

/**
 * The chaos suite's gateway run: one bot whose chat `general` is in a gateway with an IRC channel
 * (a real inspircd) and a Slack channel (the fake Slack). People on all three sides say 1,000 lines
 * each, in bursts, while every chat socket is dropped again and again, Slack drops or refreshes the
 * relay's socket, the IRC server is killed and comes back, and the bot itself is killed (SIGKILL) and
 * started again. Each side must then have every line of the two others exactly once, in the order it
 * was said, and none of its own. See docs/chaos.md "The gateway run"; replay with CHAOS_SEED=<seed>.
 */

const PER_SIDE = 1_000;
/** The lines, and the faults with them, are spread over this long. */
const TALKING_MS = 28_000;
const CHANNEL = '#general';
const SLACK_CHANNEL = 'C0GENERAL1';
const PEOPLE: Record<Side, readonly string[]> = { chat: ['alice', 'bob', 'carol'], irc: ['ivan', 'iris'], slack: ['sam', 'sue'] };
/** The fake Slack's people behind the Slack names. */
const SLACK_IDS: Record<string, string> = { sam: 'U0ALICE001', sue: 'U0BOB00001' };
const RELAY_NICK = /^gwbot/;
const IRC_TALKERS = /^(ivan|iris)$/;
const IRC_PASSWORD = 'back-soon';
/** The relay-irc's lines sent and not yet confirmed, at most (its `queue.in_flight`). */
const IRC_IN_FLIGHT = 100;

const seed = chaosSeed();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let env: Env | undefined;
let irc: IrcServer | undefined;
let slack: FakeSlack | undefined;
let audience: IrcAudience | undefined;
let ircPeople: IrcPeople | undefined;
let adminLink: AdminLink | undefined;

afterAll(async () => {
  audience?.close();
  ircPeople?.close();
  await adminLink?.close();
  await env?.close();
  await irc?.close();
  await slack?.close();
});

/** Everything the run's pieces share: the bot's process, the talkers' gates, and what was said. */
interface Run {
  bot: ChildProcess;
  chatLog: ChatLog;
  botId: string;
  slackPeople: SlackPeople;
  /** One gate per side: an episode closes a side's gate while its people must keep quiet. */
  gates: Record<Side, PostGate>;
  /** What each side's people said, in the order they said it. */
  sent: Record<Side, Line[]>;
  issued: Record<GatewayFault['kind'], number>;
  counts: { chatSocketsCut: number; botRestarts: number };
  /** Where on IRC and Slack a new connection's lines begin (the bot's, the IRC server's restart): what was in flight may come again. */
  reconnections: Record<Side, Reconnection[]>;
  /** What happened when (ms since the talking began), printed when the run fails. */
  timeline: string[];
  t0: number;
}

function note(run: Run, what: string): void {
  run.timeline.push(`${Date.now() - run.t0} ms: ${what} (said so far: ${SIDES.map((s) => `${s} ${run.sent[s].at(-1)?.tag ?? '-'}`).join(', ')})`);
}

describe('chaos: a gateway', () => {
  test(`3,000 lines from chat, IRC and Slack through socket drops, an IRC server kill and a bot kill: 0 lost, 0 echoed, in order, doubled only what died in flight (seed ${seed})`, { timeout: 150_000 }, async ({ onTestFailed }) => {
    const started = Date.now();
    process.stdout.write(`chaos-gateway: seed ${seed} (replay with CHAOS_SEED=${seed})\n`);
    const random = seededRandom(seed);
    const plan = planLines(random, PER_SIDE, PEOPLE, TALKING_MS);
    const faults = planGatewayFaults(random, TALKING_MS);
    const run = await setUp();

    const t0 = Date.now();
    run.t0 = t0;
    onTestFailed(() => {
      // What each side received and every Slack API call, for reading next to the replay.
      const file = join(tmpdir(), `groupwire-chaos-gateway-${seed}.json`);
      writeFileSync(file, JSON.stringify({
        timeline: run.timeline, sent: run.sent, chat: run.chatLog.messages, irc: audience?.relayed(CHANNEL, /./), slackCalls: slack?.api.calls,
      }, null, 1));
      process.stdout.write(`chaos-gateway: seed ${seed} failed; what each side received is in ${file}; what happened when:\n  ${run.timeline.join('\n  ')}\n`);
    });
    await Promise.all([...SIDES.map((side) => talk(run, side, plan[side], t0)), runFaults(run, faults, t0)]);
    // One last word from each side, after every fault: it must reach both other sides like the rest.
    const lastWords = SIDES.map((side) => ({ side, who: PEOPLE[side][0]!, tag: tagOf(side, PER_SIDE + 1), text: `${PEOPLE[side][0]} says ${tagOf(side, PER_SIDE + 1)}, the last word` }));
    for (const line of lastWords) await say(run, line);
    const talkedAt = Date.now();

    const received = async (): Promise<Record<Side, string[]>> => {
      const log = await run.chatLog.read();
      return {
        chat: log.filter((m) => String(m.user_id) === run.botId).map((m) => m.message),
        irc: relayedOnIrc(),
        slack: postedOnSlack(),
      };
    };
    const expectedOn = (side: Side) => SIDES.filter((s) => s !== side).flatMap((s) => run.sent[s].map((line) => line.tag));
    await waitFor('every line on both other sides', async () => {
      const now = await received();
      return SIDES.every((side) => {
        const tags = new Set(now[side].flatMap(tagsIn));
        return expectedOn(side).every((tag) => tags.has(tag));
      });
    }, 60_000).catch(async (error: unknown) => {
      process.stdout.write(`chaos-gateway: seed ${seed} did not settle:\n  ${describeTally(tally(await origins(run), await received(), run.reconnections)).join('\n  ')}\n`);
      throw error;
    });

    // Each origin's own record is the truth of what was said there, and in which order.
    const said = await origins(run);
    const result = tally(said, await received(), run.reconnections);
    const summary = describeTally(result);
    process.stdout.write(`chaos-gateway: seed ${seed}; arrived: ${summary.join('; ')}\n`);
    // Every line said reached its own side (IRC: the server passed it on; two people's lines interleave as the server took them).
    for (const side of SIDES) {
      const sorted = (lines: Line[]) => lines.map((l) => l.tag).sort();
      expect(sorted(said[side]), `what ${side} has of its people's lines`).toEqual(sorted(run.sent[side]));
    }
    for (const side of SIDES) {
      for (const [origin, path] of Object.entries(result[side].from)) {
        expect({ lost: path.lost, doubled: path.doubled, altered: path.altered, outOfOrder: path.outOfOrder }, `${side} <- ${origin}`)
          .toEqual({ lost: [], doubled: [], altered: [], outOfOrder: undefined });
      }
      expect(result[side].echoed, `echoed on ${side}`).toEqual([]);
      expect(result[side].strangers, `untagged lines on ${side}`).toEqual([]);
    }
    expect(Object.values(run.issued).every((n) => n > 0)).toBe(true);

    process.stdout.write(`chaos-gateway: seed ${seed}; faults: ${run.issued['drop-chat-sockets']} chat socket drops (${run.counts.chatSocketsCut} sockets cut), ` +
      `${run.issued['slack-socket']} Slack socket drops/refreshes (Socket Mode connections: ${slack!.socket.opened}), ${run.issued['irc-kill']} IRC server kill, ` +
      `${run.issued['bot-kill']} bot kill (SIGKILL); said: ${SIDES.map((s) => `${run.sent[s].length} ${s}`).join(', ')}; talking ${((talkedAt - t0) / 1000).toFixed(1)} s, settling ${((Date.now() - talkedAt) / 1000).toFixed(1)} s, ` +
      `in all ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  });
});

/** The IRC server with a watcher and two people, the fake Slack, the service, and the bot in a child process. */
async function setUp(): Promise<Run> {
  irc = await IrcServer.start({ kind: 'inspircd' });
  audience = new IrcAudience(irc, 'watcher', [CHANNEL]);
  await audience.connect();
  ircPeople = new IrcPeople(irc, PEOPLE.irc, CHANNEL);
  await ircPeople.connect();
  slack = await FakeSlack.start();
  env = await makeEnv([]);
  adminLink = new AdminLink(env.svc);
  env.writeConfig([{
    chats: [{ chat: 'general' }],
    // Lines from IRC and Slack are the bot's posts: room for two sides' worth, and the backlog after its restart.
    reply_rate: { per_second: 300, burst: 100 },
    plugins: [
      relayPlugin(irc, { channels: {}, rate: { lines_per_second: 600, burst: 100 }, queue: { in_flight: IRC_IN_FLIGHT } }),
      { use: 'relay-slack', with: { token: TOKENS.bot, app_token: TOKENS.app, api_url: slack.apiUrl, channels: {}, request_timeout_ms: 5_000 } },
    ],
  }], [{ name: 'lobby', endpoints: [{ chat: 'general' }, { irc: CHANNEL }, { slack: SLACK_CHANNEL }] }]);

  const reader = env.client('bob');
  const botId = String((await env.client('bot').login()).id);
  const general = (await chatOf(reader, 'general'))!;
  const chatLog = new ChatLog(reader, general.id, 0);
  // What the chat had before: the seed's messages are nobody's lines.
  await chatLog.read();
  chatLog.messages.length = 0;

  const bot = await env.spawn();
  await relayOnIrc(0);
  await waitFor('the relay\'s Socket Mode connection', () => slack!.socket.openConnections().length > 0);
  return {
    bot, chatLog, botId, slackPeople: new SlackPeople(slack, SLACK_CHANNEL, SLACK_IDS),
    gates: { chat: new PostGate(), irc: new PostGate(), slack: new PostGate() },
    sent: { chat: [], irc: [], slack: [] },
    issued: { 'drop-chat-sockets': 0, 'slack-socket': 0, 'irc-kill': 0, 'bot-kill': 0 },
    counts: { chatSocketsCut: 0, botRestarts: 0 },
    reconnections: { chat: [], irc: [], slack: [] }, timeline: [], t0: Date.now(),
  };
}

/** The relay's lines on IRC, as the watcher saw them (over its connections), in order. */
function relayedOnIrc(): string[] {
  return audience!.relayed(CHANNEL, RELAY_NICK);
}

/** What the relay posted in the Slack channel, in order, as a Slack client shows it. */
function postedOnSlack(): string[] {
  return slack!.posts.filter((p) => p.channel === SLACK_CHANNEL).map((p) => rendered(p.text));
}

/** Waits until the IRC watcher saw the relay join the channel in its current connection, past line `from`. */
async function relayOnIrc(from: number): Promise<void> {
  const join = new RegExp(`^:gwbot\\S*!\\S+ JOIN :?${CHANNEL}$`, 'i');
  await waitFor('the relay in the IRC channel', () => audience!.current.lines.slice(from).some((line) => join.test(line)), 30_000);
}

/** One line, said on its side. */
async function say(run: Run, line: Line): Promise<void> {
  if (line.side === 'chat') await adminLink!.post({ chat: 'general', who: line.who as DemoUser, message: line.text, count: 1 });
  else if (line.side === 'irc') ircPeople!.say(line.who, line.text);
  else run.slackPeople.say(line.who, line.text);
  run.sent[line.side].push(line);
}

/** A side's bursts at their times (as fast as it can when behind), each through the side's gate. */
async function talk(run: Run, side: Side, bursts: Burst[], t0: number): Promise<void> {
  for (const burst of bursts) {
    if (t0 + burst.atMs > Date.now()) await pause(t0 + burst.atMs - Date.now());
    await run.gates[side].enter();
    try {
      for (const line of burst.lines) await say(run, line);
    } finally {
      run.gates[side].leave();
    }
  }
}

/**
 * Applies each fault at its time. Chat socket drops strike whenever they are due; the episodes (a
 * Slack socket fault, the IRC server's outage, the bot's kill) run one at a time, alongside.
 */
async function runFaults(run: Run, faults: TimedGatewayFault[], t0: number): Promise<void> {
  let episodes = Promise.resolve();
  for (const { atMs, fault } of faults) {
    if (t0 + atMs > Date.now()) await pause(t0 + atMs - Date.now());
    run.issued[fault.kind] += 1;
    if (fault.kind === 'drop-chat-sockets') {
      run.counts.chatSocketsCut += (await adminLink!.call('faults/drop-sockets', {})).dropped;
      note(run, 'chat sockets dropped');
      continue;
    }
    episodes = episodes.then(() => fault.kind === 'slack-socket' ? slackSocketFault(run, fault.how)
      : fault.kind === 'irc-kill' ? ircOutage(run, fault.downMs) : botKill(run, fault.downMs));
  }
  await episodes;
}

/** Waits until every line IRC's people said has reached the chat: the relay has taken it for good. */
async function ircLinesTaken(run: Run): Promise<void> {
  await waitFor('the IRC lines said so far in the chat', async () => {
    const tags = new Set((await run.chatLog.read()).filter((m) => String(m.user_id) === run.botId).flatMap((m) => tagsIn(m.message)));
    return run.sent.irc.every((line) => tags.has(line.tag));
  }, 30_000);
}

/**
 * Slack drops the relay's socket, or asks it to refresh (`disconnect`, reason refresh_requested). Its
 * people keep quiet until the relay has acknowledged all they said, so that no retry of Slack's comes
 * after a newer line (Slack does not keep order across its retries); what they say after the drop
 * waits in the fake for the relay's next connection.
 */
async function slackSocketFault(run: Run, how: 'drop' | 'refresh'): Promise<void> {
  await run.gates.slack.close();
  try {
    await waitFor('every Slack event acknowledged', () => run.slackPeople.allAcknowledged(), 30_000);
    if (how === 'drop') slack!.socket.drop();
    else slack!.socket.disconnect('refresh_requested');
    note(run, `Slack socket ${how === 'drop' ? 'dropped' : 'refresh requested'}`);
  } finally {
    run.gates.slack.open();
  }
}

/**
 * The IRC server killed (SIGKILL) and back after `downMs`, with a password the relay does not have
 * until the watcher and the people are in the channel again, so they see all the relay sends after the
 * outage. IRC keeps no history: a line said while the relay is not in the channel reaches no one, so
 * IRC's people keep quiet from before the kill (once the relay has taken all they said) until the
 * relay is back in the channel.
 */
async function ircOutage(run: Run, downMs: number): Promise<void> {
  await run.gates.irc.close();
  try {
    await ircLinesTaken(run);
    note(run, 'IRC server killed');
    await irc!.kill();
    await pause(downMs);
    await irc!.setPassword(IRC_PASSWORD);
    // The watcher's old connection died with the server: what the relay sends from now on is new.
    run.reconnections.irc.push({ at: relayedOnIrc().length, inFlight: IRC_IN_FLIGHT });
    await irc!.start();
    await audience!.connect(IRC_PASSWORD);
    await ircPeople!.connect(IRC_PASSWORD);
    await irc!.setPassword(undefined);
    note(run, 'IRC server back');
    await relayOnIrc(0);
    note(run, 'the relay back in the IRC channel');
  } finally {
    run.gates.irc.open();
  }
}

/**
 * The bot's process killed (SIGKILL) and started again after `downMs`. The chat's people talk all
 * along (the bot reads what it missed from the history); Slack's too (Slack sends again what the relay
 * did not acknowledge, and the fake keeps events while no connection is open), except for a moment
 * around the kill: they keep quiet from when every line they said was acknowledged until the fake has
 * let go of the dead connection, so no retry comes after a newer line. IRC's people keep quiet from
 * before the kill (once the relay has taken all they said) until the relay is back in the channel.
 */
async function botKill(run: Run, downMs: number): Promise<void> {
  await Promise.all([run.gates.irc.close(), run.gates.slack.close()]);
  let slackOpen = false;
  try {
    await ircLinesTaken(run);
    await waitFor('every Slack event acknowledged', () => run.slackPeople.allAcknowledged(), 30_000);
    const joinedBefore = audience!.current.lines.length;
    note(run, 'bot killed');
    await kill(run.bot, 'SIGKILL');
    await waitFor('the fake Slack letting go of the dead connection', () => run.slackPeople.noConnections(), 10_000);
    run.gates.slack.open();
    slackOpen = true;
    await pause(downMs);
    // Everything here so far came from the killed bot; what comes from now on, from the new one.
    run.reconnections.irc.push({ at: relayedOnIrc().length, inFlight: IRC_IN_FLIGHT });
    run.reconnections.slack.push({ at: postedOnSlack().length, inFlight: 1 });
    run.bot = await env!.spawn();
    run.counts.botRestarts += 1;
    note(run, 'bot connected again');
    await relayOnIrc(joinedBefore);
    note(run, 'the relay back in the IRC channel');
  } finally {
    if (!slackOpen) run.gates.slack.open();
    run.gates.irc.open();
  }
}

/**
 * What each origin has of its people's lines, in its order: the chat's history (members' messages),
 * what IRC's server passed on to the watcher, and the order the fake Slack sent its events in.
 */
async function origins(run: Run): Promise<Record<Side, Line[]>> {
  const byTag = new Map(SIDES.flatMap((side) => run.sent[side].map((line) => [line.tag, line] as const)));
  const lines = (texts: string[]) => texts.flatMap((text) => tagsIn(text).flatMap((tag) => byTag.get(tag) ?? []));
  const log = await run.chatLog.read();
  return {
    chat: lines(log.filter((m) => String(m.user_id) !== run.botId).map((m) => m.message)),
    irc: lines(audience!.relayed(CHANNEL, IRC_TALKERS)),
    slack: run.sent.slack,
  };
}
