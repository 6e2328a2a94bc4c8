import type { ChildProcess } from 'node:child_process';
import { AdminLink, IrcAudience, PostGate } from './chaos.js';
import { tagsIn, type Burst, type GatewayFault, type Line, type Reconnection, type Side, type TimedGatewayFault } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { ChatLog, IrcPeople } from './chaos-sides.js';
import { IrcServer, relayPlugin } from './irc-server.js';
import type { DemoUser } from './service.js';
import { chatOf, kill, makeEnv, waitFor, type Env } from './supervisor.js';

/**
 * The world of the gateway chaos run (test/chaos-gateway.test.ts, docs/chaos.md "The gateway run"):
 * the service, inspircd, the platforms (chaos-platforms.ts) and the bot in a child process; the people
 * of every side talking through a gate each; and the episodes that kill or cut something, each making
 * its people keep quiet exactly where the platform could not do better (IRC keeps no history; Slack
 * does not keep order across its retries).
 */

export const CHANNEL = '#general';
const CHAT_PEOPLE = ['alice', 'bob', 'carol'] as const;
const IRC_PEOPLE = ['ivan', 'iris'] as const;
const RELAY_NICK = /^gwbot/;
const IRC_TALKERS = /^(ivan|iris)$/;
const IRC_PASSWORD = 'back-soon';
/** The IRC relay's lines sent and not yet confirmed, at most (its `queue.in_flight`). */
const IRC_IN_FLIGHT = 100;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class GatewayRun {
  readonly sides: Side[];
  /** Who talks on each side. */
  readonly people: Record<Side, readonly string[]>;
  /** One gate per side: an episode closes a side's gate while its people must keep quiet. */
  readonly gates: Record<Side, PostGate>;
  /** What each side's people said, in the order they said it. */
  readonly sent: Record<Side, Line[]>;
  readonly issued: Record<GatewayFault['kind'], number> = { 'drop-chat-sockets': 0, 'platform-cut': 0, 'irc-kill': 0, 'bot-kill': 0 };
  readonly counts = { chatSocketsCut: 0, botRestarts: 0 };
  /** Where on IRC a new connection's lines begin (the IRC server's restart): what was in flight may come again. */
  readonly reconnections: Record<Side, Reconnection[]> = { irc: [] };
  /** What happened when (ms since the talking began), printed when the run fails. */
  readonly timeline: string[] = [];
  /** When the talking began. */
  t0 = Date.now();
  private readonly platformOf: Map<Side, PlatformSide>;

  private constructor(
    readonly env: Env,
    readonly irc: IrcServer,
    readonly platforms: PlatformSide[],
    readonly audience: IrcAudience,
    private readonly ircPeople: IrcPeople,
    private readonly adminLink: AdminLink,
    readonly chatLog: ChatLog,
    private readonly botId: string,
    private bot: ChildProcess,
  ) {
    this.platformOf = new Map(platforms.map((platform) => [platform.side, platform]));
    this.sides = ['chat', 'irc', ...platforms.map((platform) => platform.side)];
    this.people = { chat: CHAT_PEOPLE, irc: IRC_PEOPLE, ...Object.fromEntries(platforms.map((platform) => [platform.side, platform.people])) };
    this.gates = Object.fromEntries(this.sides.map((side) => [side, new PostGate()]));
    this.sent = Object.fromEntries(this.sides.map((side) => [side, []]));
  }

  /**
   * The IRC server with a watcher and two people, the platforms (started by the caller), the service,
   * and the bot in a child process with every relay, their channels named only by bots.yaml's
   * `gateways:`. `started` gets each piece as it starts, to be closed whatever happens next.
   */
  static async start(started: Array<{ close(): unknown }>, platforms: PlatformSide[]): Promise<GatewayRun> {
    const irc = await IrcServer.start({ kind: 'inspircd', history: true });
    started.push(irc);
    const audience = new IrcAudience(irc, 'watcher', [CHANNEL]);
    started.push(audience);
    await audience.connect();
    await keepHistory(audience);
    const ircPeople = new IrcPeople(irc, IRC_PEOPLE, CHANNEL);
    started.push(ircPeople);
    await ircPeople.connect();
    const env = await makeEnv([]);
    started.push(env);
    const adminLink = new AdminLink(env.svc);
    started.push(adminLink);
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      // Lines from the other sides are the bot's posts: room for their worth, and the backlog after its restart.
      reply_rate: { per_second: 300, burst: 100 },
      plugins: [
        relayPlugin(irc, { channels: {}, rate: { lines_per_second: 600, burst: 100 }, queue: { in_flight: IRC_IN_FLIGHT } }),
        ...platforms.map((platform) => platform.plugin()),
      ],
    }], [{ name: 'lobby', endpoints: [{ chat: 'general' }, { irc: CHANNEL }, ...platforms.map((platform) => platform.endpoint())] }]);

    const reader = env.client('bob');
    const botId = String((await env.client('bot').login()).id);
    const chatLog = new ChatLog(reader, (await chatOf(reader, 'general'))!.id, 0);
    // What the chat had before (the seed's messages) is nobody's line.
    await chatLog.read();
    chatLog.messages.length = 0;

    const bot = await env.spawn();
    const run = new GatewayRun(env, irc, platforms, audience, ircPeople, adminLink, chatLog, botId, bot);
    await run.relayInChannel(0);
    for (const platform of platforms) await platform.connected();
    return run;
  }

  note(what: string): void {
    this.timeline.push(`${Date.now() - this.t0} ms: ${what} (said so far: ${this.sides.map((s) => `${s} ${this.sent[s]!.at(-1)?.tag ?? '-'}`).join(', ')})`);
  }

  /** One line, said on its side. */
  async say(line: Line): Promise<void> {
    if (line.side === 'chat') await this.adminLink.post({ chat: 'general', who: line.who as DemoUser, message: line.text, count: 1 });
    else if (line.side === 'irc') this.ircPeople.say(line.who, line.text);
    else await this.platformOf.get(line.side)!.say(line.who, line.text);
    this.sent[line.side]!.push(line);
  }

  /** A side's bursts at their times (as fast as it can when behind), each through the side's gate. */
  async talk(side: Side, bursts: Burst[]): Promise<void> {
    for (const burst of bursts) {
      if (this.t0 + burst.atMs > Date.now()) await pause(this.t0 + burst.atMs - Date.now());
      await this.gates[side]!.enter();
      try {
        for (const line of burst.lines) await this.say(line);
      } finally {
        this.gates[side]!.leave();
      }
    }
  }

  /**
   * Applies each fault at its time. Chat socket drops strike whenever they are due; the episodes (a
   * platform's cut, the IRC server's outage, the bot's kill) run one at a time, alongside.
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
      episodes = episodes.then(() => fault.kind === 'platform-cut' ? this.platformCut(fault.side, fault.variant)
        : fault.kind === 'irc-kill' ? this.ircOutage(fault.downMs) : this.botKill(fault.downMs));
    }
    await episodes;
  }

  /** What each side received, in arrival order: the bot's posts in the chat, the relay's lines on IRC and its posts on each platform. */
  async received(): Promise<Record<Side, string[]>> {
    const log = await this.chatLog.read();
    const result: Record<Side, string[]> = { chat: log.filter((m) => String(m.user_id) === this.botId).map((m) => m.message), irc: this.relayedOnIrc() };
    for (const platform of this.platforms) result[platform.side] = await platform.received();
    return result;
  }

  /**
   * What each origin has of its people's lines, in its order: the chat's history (members' messages),
   * what IRC's server passed on to the watcher, and each platform's own order.
   */
  async origins(): Promise<Record<Side, Line[]>> {
    const byTag = new Map(this.sides.flatMap((side) => this.sent[side]!.map((line) => [line.tag, line] as const)));
    const lines = (texts: string[]) => texts.flatMap((text) => tagsIn(text).flatMap((tag) => byTag.get(tag) ?? []));
    const log = await this.chatLog.read();
    const result: Record<Side, Line[]> = {
      chat: lines(log.filter((m) => String(m.user_id) !== this.botId).map((m) => m.message)),
      irc: lines(this.audience.relayed(CHANNEL, IRC_TALKERS)),
    };
    for (const platform of this.platforms) result[platform.side] = await platform.origin(this.sent[platform.side]!);
    return result;
  }

  /** The relay's lines on IRC, as the watcher saw them (over its connections), in order. */
  private relayedOnIrc(): string[] {
    return this.audience.relayed(CHANNEL, RELAY_NICK);
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
      return this.sent.irc!.every((line) => tags.has(line.tag));
    }, 30_000);
  }

  /** A platform cuts its relay's connection, its own way (chaos-platforms.ts). */
  private async platformCut(side: Side, variant: number): Promise<void> {
    this.note(await this.platformOf.get(side)!.cut(variant, this.gates[side]!));
  }

  /**
   * The IRC server killed (SIGKILL) and back after `downMs`, with a password the relay does not have
   * until the watcher and the people are in the channel again, so they see all the relay sends after the
   * outage. IRC keeps no history: a line said while the relay is not in the channel reaches no one, so
   * IRC's people keep quiet from before the kill (once the relay has taken all they said) until the
   * relay is back in the channel.
   */
  private async ircOutage(downMs: number): Promise<void> {
    await this.gates.irc!.close();
    try {
      await this.ircLinesTaken();
      this.note('IRC server killed');
      await this.irc.kill();
      await pause(downMs);
      await this.irc.setPassword(IRC_PASSWORD);
      // The watcher's old connection died with the server: what the relay sends from now on is new.
      this.reconnections.irc!.push({ at: this.relayedOnIrc().length, inFlight: IRC_IN_FLIGHT });
      await this.irc.start();
      await this.audience.connect(IRC_PASSWORD);
      await keepHistory(this.audience);
      await this.ircPeople.connect(IRC_PASSWORD);
      await this.irc.setPassword(undefined);
      this.note('IRC server back');
      await this.relayInChannel(0);
      this.note('the relay back in the IRC channel');
    } finally {
      this.gates.irc!.open();
    }
  }

  /**
   * The bot's process killed (SIGKILL) and started again after `downMs`. The chat's people talk all
   * along (the bot reads what it missed from the history); each platform's keep quiet around the kill
   * only where the platform needs it (Slack: from when every line they said was acknowledged until the
   * fake has let go of the dead connection, so no retry comes after a newer line). IRC's people keep
   * quiet from before the kill (once the relay has taken all they said) until the relay is back in the
   * channel.
   */
  private async botKill(downMs: number): Promise<void> {
    const platformGates = this.platforms.map((platform) => this.gates[platform.side]!);
    await Promise.all([this.gates.irc!.close(), ...platformGates.map((gate) => gate.close())]);
    let platformsOpen = false;
    try {
      await this.ircLinesTaken();
      for (const platform of this.platforms) await platform.beforeKill();
      const joinedBefore = this.audience.current.lines.length;
      this.note('bot killed');
      await kill(this.bot, 'SIGKILL');
      for (const platform of this.platforms) {
        await platform.killed();
        // A platform without idempotency keys nor a history to read: what was in flight may come again after the restart.
        if (platform.sendsAgainAfterKill) {
          this.reconnections[platform.side] = [...(this.reconnections[platform.side] ?? []), { at: (await platform.received()).length, inFlight: platform.sendsAgainAfterKill }];
        }
      }
      for (const gate of platformGates) gate.open();
      platformsOpen = true;
      await pause(downMs);
      // No line in flight when the bot died may show twice: on IRC the new bot reads the channel's
      // history before sending, on each platform the relay finds a post whose answer it never had
      // (but Telegram's, above).
      this.bot = await this.env.spawn();
      this.counts.botRestarts += 1;
      this.note('bot connected again');
      await this.relayInChannel(joinedBefore);
      this.note('the relay back in the IRC channel');
    } finally {
      if (!platformsOpen) for (const gate of platformGates) gate.open();
      this.gates.irc!.open();
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
