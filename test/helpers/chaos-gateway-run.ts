import type { ChildProcess } from 'node:child_process';
import { FakeSlack, rendered, TOKENS } from '../fakes/slack/index.js';
import { AdminLink, IrcAudience, PostGate } from './chaos.js';
import { SIDES, tagsIn, type Burst, type GatewayFault, type Line, type Reconnection, type Side, type TimedGatewayFault } from './chaos-gateway.js';
import { ChatLog, IrcPeople, SlackPeople } from './chaos-sides.js';
import { IrcServer, relayPlugin } from './irc-server.js';
import type { DemoUser } from './service.js';
import { chatOf, kill, makeEnv, waitFor, type Env } from './supervisor.js';

/**
 * The world of the gateway chaos run (test/chaos-gateway.test.ts, docs/chaos.md "The gateway run"):
 * the service, inspircd, the fake Slack and the bot in a child process; the people of the three sides
 * talking through a gate each; and the episodes that kill or cut something, each making its people
 * keep quiet exactly where the platform could not do better (IRC keeps no history; Slack does not keep
 * order across its retries).
 */

export const CHANNEL = '#general';
export const SLACK_CHANNEL = 'C0GENERAL1';
export const PEOPLE: Record<Side, readonly string[]> = { chat: ['alice', 'bob', 'carol'], irc: ['ivan', 'iris'], slack: ['sam', 'sue'] };
/** The fake Slack's people behind the Slack names. */
const SLACK_IDS: Record<string, string> = { sam: 'U0ALICE001', sue: 'U0BOB00001' };
const RELAY_NICK = /^gwbot/;
const IRC_TALKERS = /^(ivan|iris)$/;
const IRC_PASSWORD = 'back-soon';
/** The IRC relay's lines sent and not yet confirmed, at most (its `queue.in_flight`). */
const IRC_IN_FLIGHT = 100;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class GatewayRun {
  /** One gate per side: an episode closes a side's gate while its people must keep quiet. */
  readonly gates: Record<Side, PostGate> = { chat: new PostGate(), irc: new PostGate(), slack: new PostGate() };
  /** What each side's people said, in the order they said it. */
  readonly sent: Record<Side, Line[]> = { chat: [], irc: [], slack: [] };
  readonly issued: Record<GatewayFault['kind'], number> = { 'drop-chat-sockets': 0, 'slack-socket': 0, 'irc-kill': 0, 'bot-kill': 0 };
  readonly counts = { chatSocketsCut: 0, botRestarts: 0 };
  /** Where on IRC and Slack a new connection's lines begin (the bot's, the IRC server's restart): what was in flight may come again. */
  readonly reconnections: Record<Side, Reconnection[]> = { chat: [], irc: [], slack: [] };
  /** What happened when (ms since the talking began), printed when the run fails. */
  readonly timeline: string[] = [];
  /** When the talking began. */
  t0 = Date.now();
  private readonly slackPeople: SlackPeople;

  private constructor(
    readonly env: Env,
    readonly irc: IrcServer,
    readonly slack: FakeSlack,
    readonly audience: IrcAudience,
    private readonly ircPeople: IrcPeople,
    private readonly adminLink: AdminLink,
    readonly chatLog: ChatLog,
    private readonly botId: string,
    private bot: ChildProcess,
  ) {
    this.slackPeople = new SlackPeople(slack, SLACK_CHANNEL, SLACK_IDS);
  }

  /**
   * The IRC server with a watcher and two people, the fake Slack, the service, and the bot in a child
   * process with both relays, their channels named only by bots.yaml's `gateways:`. `started` gets
   * each piece as it starts, to be closed whatever happens next.
   */
  static async start(started: Array<{ close(): unknown }>): Promise<GatewayRun> {
    const irc = await IrcServer.start({ kind: 'inspircd', history: true });
    started.push(irc);
    const audience = new IrcAudience(irc, 'watcher', [CHANNEL]);
    started.push(audience);
    await audience.connect();
    await keepHistory(audience);
    const ircPeople = new IrcPeople(irc, PEOPLE.irc, CHANNEL);
    started.push(ircPeople);
    await ircPeople.connect();
    const slack = await FakeSlack.start();
    started.push(slack);
    const env = await makeEnv([]);
    started.push(env);
    const adminLink = new AdminLink(env.svc);
    started.push(adminLink);
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
    const chatLog = new ChatLog(reader, (await chatOf(reader, 'general'))!.id, 0);
    // What the chat had before (the seed's messages) is nobody's line.
    await chatLog.read();
    chatLog.messages.length = 0;

    const bot = await env.spawn();
    const run = new GatewayRun(env, irc, slack, audience, ircPeople, adminLink, chatLog, botId, bot);
    await run.relayInChannel(0);
    await waitFor('the relay\'s Socket Mode connection', () => slack.socket.openConnections().length > 0);
    return run;
  }

  note(what: string): void {
    this.timeline.push(`${Date.now() - this.t0} ms: ${what} (said so far: ${SIDES.map((s) => `${s} ${this.sent[s].at(-1)?.tag ?? '-'}`).join(', ')})`);
  }

  /** One line, said on its side. */
  async say(line: Line): Promise<void> {
    if (line.side === 'chat') await this.adminLink.post({ chat: 'general', who: line.who as DemoUser, message: line.text, count: 1 });
    else if (line.side === 'irc') this.ircPeople.say(line.who, line.text);
    else this.slackPeople.say(line.who, line.text);
    this.sent[line.side].push(line);
  }

  /** A side's bursts at their times (as fast as it can when behind), each through the side's gate. */
  async talk(side: Side, bursts: Burst[]): Promise<void> {
    for (const burst of bursts) {
      if (this.t0 + burst.atMs > Date.now()) await pause(this.t0 + burst.atMs - Date.now());
      await this.gates[side].enter();
      try {
        for (const line of burst.lines) await this.say(line);
      } finally {
        this.gates[side].leave();
      }
    }
  }

  /**
   * Applies each fault at its time. Chat socket drops strike whenever they are due; the episodes (a
   * Slack socket fault, the IRC server's outage, the bot's kill) run one at a time, alongside.
   */
  async runFaults(faults: TimedGatewayFault[]): Promise<void> {
    let episodes = Promise.resolve();
    for (const { atMs, fault } of faults) {
      if (this.t0 + atMs > Date.now()) await pause(this.t0 + atMs - Date.now());
      this.issued[fault.kind] += 1;
      if (fault.kind === 'drop-chat-sockets') {
        this.counts.chatSocketsCut += (await this.adminLink.call('faults/drop-sockets', {})).dropped;
        this.note('chat sockets dropped');
        continue;
      }
      episodes = episodes.then(() => fault.kind === 'slack-socket' ? this.slackSocketFault(fault.how)
        : fault.kind === 'irc-kill' ? this.ircOutage(fault.downMs) : this.botKill(fault.downMs));
    }
    await episodes;
  }

  /** What each side received, in arrival order: the bot's posts in the chat, the relay's lines on IRC and its posts in Slack. */
  async received(): Promise<Record<Side, string[]>> {
    const log = await this.chatLog.read();
    return { chat: log.filter((m) => String(m.user_id) === this.botId).map((m) => m.message), irc: this.relayedOnIrc(), slack: this.postedOnSlack() };
  }

  /**
   * What each origin has of its people's lines, in its order: the chat's history (members' messages),
   * what IRC's server passed on to the watcher, and the order the fake Slack sent its events in.
   */
  async origins(): Promise<Record<Side, Line[]>> {
    const byTag = new Map(SIDES.flatMap((side) => this.sent[side].map((line) => [line.tag, line] as const)));
    const lines = (texts: string[]) => texts.flatMap((text) => tagsIn(text).flatMap((tag) => byTag.get(tag) ?? []));
    const log = await this.chatLog.read();
    return {
      chat: lines(log.filter((m) => String(m.user_id) !== this.botId).map((m) => m.message)),
      irc: lines(this.audience.relayed(CHANNEL, IRC_TALKERS)),
      slack: this.sent.slack,
    };
  }

  /** The relay's lines on IRC, as the watcher saw them (over its connections), in order. */
  private relayedOnIrc(): string[] {
    return this.audience.relayed(CHANNEL, RELAY_NICK);
  }

  /** What the relay posted in the Slack channel, in order, as a Slack client shows it. */
  private postedOnSlack(): string[] {
    return this.slack.posts.filter((p) => p.channel === SLACK_CHANNEL).map((p) => rendered(p.text));
  }

  /** Waits until the IRC watcher saw the relay join the channel in its current connection, past line `from`. */
  private async relayInChannel(from: number): Promise<void> {
    const join = new RegExp(`^:gwbot\\S*!\\S+ JOIN :?${CHANNEL}$`, 'i');
    await waitFor('the relay in the IRC channel', () => this.audience.current.lines.slice(from).some((line) => join.test(line)), 30_000);
  }

  /** Waits until every line IRC's people said has reached the chat: the relay has taken it for good. */
  private async ircLinesTaken(): Promise<void> {
    await waitFor('the IRC lines said so far in the chat', async () => {
      const tags = new Set((await this.chatLog.read()).filter((m) => String(m.user_id) === this.botId).flatMap((m) => tagsIn(m.message)));
      return this.sent.irc.every((line) => tags.has(line.tag));
    }, 30_000);
  }

  /**
   * Slack drops the relay's socket, or asks it to refresh (`disconnect`, reason refresh_requested). Its
   * people keep quiet until the relay has acknowledged all they said, so that no retry of Slack's comes
   * after a newer line (Slack does not keep order across its retries); what they say after the drop
   * waits in the fake for the relay's next connection.
   */
  private async slackSocketFault(how: 'drop' | 'refresh'): Promise<void> {
    await this.gates.slack.close();
    try {
      await waitFor('every Slack event acknowledged', () => this.slackPeople.allAcknowledged(), 30_000);
      if (how === 'drop') this.slack.socket.drop();
      else this.slack.socket.disconnect('refresh_requested');
      this.note(`Slack socket ${how === 'drop' ? 'dropped' : 'refresh requested'}`);
    } finally {
      this.gates.slack.open();
    }
  }

  /**
   * The IRC server killed (SIGKILL) and back after `downMs`, with a password the relay does not have
   * until the watcher and the people are in the channel again, so they see all the relay sends after the
   * outage. IRC keeps no history: a line said while the relay is not in the channel reaches no one, so
   * IRC's people keep quiet from before the kill (once the relay has taken all they said) until the
   * relay is back in the channel.
   */
  private async ircOutage(downMs: number): Promise<void> {
    await this.gates.irc.close();
    try {
      await this.ircLinesTaken();
      this.note('IRC server killed');
      await this.irc.kill();
      await pause(downMs);
      await this.irc.setPassword(IRC_PASSWORD);
      // The watcher's old connection died with the server: what the relay sends from now on is new.
      this.reconnections.irc.push({ at: this.relayedOnIrc().length, inFlight: IRC_IN_FLIGHT });
      await this.irc.start();
      await this.audience.connect(IRC_PASSWORD);
      await keepHistory(this.audience);
      await this.ircPeople.connect(IRC_PASSWORD);
      await this.irc.setPassword(undefined);
      this.note('IRC server back');
      await this.relayInChannel(0);
      this.note('the relay back in the IRC channel');
    } finally {
      this.gates.irc.open();
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
  private async botKill(downMs: number): Promise<void> {
    await Promise.all([this.gates.irc.close(), this.gates.slack.close()]);
    let slackOpen = false;
    try {
      await this.ircLinesTaken();
      await waitFor('every Slack event acknowledged', () => this.slackPeople.allAcknowledged(), 30_000);
      const joinedBefore = this.audience.current.lines.length;
      this.note('bot killed');
      await kill(this.bot, 'SIGKILL');
      await waitFor('the fake Slack letting go of the dead connection', () => this.slackPeople.noConnections(), 10_000);
      this.gates.slack.open();
      slackOpen = true;
      await pause(downMs);
      // No line in flight when the bot died may show twice: on IRC the new bot reads the channel's
      // history before sending, on Slack it looks for a post whose answer it never had.
      this.bot = await this.env.spawn();
      this.counts.botRestarts += 1;
      this.note('bot connected again');
      await this.relayInChannel(joinedBefore);
      this.note('the relay back in the IRC channel');
    } finally {
      if (!slackOpen) this.gates.slack.open();
      this.gates.irc.open();
    }
  }
}

/**
 * The channel keeps its history (inspircd's +H, replayed on join): what the relay reads after its
 * restart to leave out the lines the server took just before the bot was killed. The watcher, first
 * in the channel, is its operator; a server killed forgets the channel, so this is done again.
 */
async function keepHistory(audience: IrcAudience): Promise<void> {
  audience.current.send(`MODE ${CHANNEL} +H 500:1h`);
  await audience.current.waitForLine(new RegExp(` MODE ${CHANNEL} \\+H`, 'i'));
}
