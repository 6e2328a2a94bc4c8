import { Agent, request } from 'undici';
import { IrcWatcher, type IrcServer } from './irc-server.js';
import { DEMO, parseJson, type DemoUser, type TestService } from './service.js';

/**
 * Pieces of the chaos suite (test/chaos.test.ts): a seeded random source, the plan of posts and of
 * faults drawn from it, an admin link that survives the service's restart, and an IRC audience that
 * keeps watching the channels across a kill of the IRC server. The gateway run
 * (test/chaos-gateway.test.ts) shares the seed, the gate, the admin link and the audience.
 */

/** The seed: CHAOS_SEED when given (to replay a failure), else a fresh one. */
export function chaosSeed(): number {
  const given = process.env.CHAOS_SEED;
  if (given !== undefined && given !== '') {
    const seed = Number(given);
    if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`CHAOS_SEED must be a whole number, got ${JSON.stringify(given)}`);
    return seed;
  }
  return Math.floor(Math.random() * 2 ** 31);
}

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const between = (random: () => number, low: number, high: number) => low + random() * (high - low);
const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

/** One admin post: `count` messages by `who` (numbered `{n}` when more than one). */
export interface PostBatch {
  chat: string;
  who: DemoUser;
  message: string;
  count: number;
}

/**
 * `total` member messages in batches of 1 to 4 (bursts, as people type), about `pingShare` of them a
 * lone `!ping`, each chat posted to by its own members.
 */
export function planPosts(random: () => number, total: number, members: Record<string, readonly DemoUser[]>, pingShare = 0.03): PostBatch[] {
  const chats = Object.keys(members);
  const batches: PostBatch[] = [];
  let planned = 0;
  while (planned < total) {
    const chat = pick(random, chats);
    const who = pick(random, members[chat]!);
    const index = batches.length + 1;
    if (random() < pingShare * 2.5) {
      // A batch averages 2.5 messages: this share of batches makes about pingShare of the messages.
      batches.push({ chat, who, message: '!ping', count: 1 });
      planned += 1;
      continue;
    }
    const count = Math.min(total - planned, 1 + Math.floor(random() * 4));
    batches.push({ chat, who, message: count > 1 ? `${who} in ${chat}: batch ${index} line {n}` : `${who} in ${chat}: line ${index}`, count });
    planned += count;
  }
  return batches;
}

export type Fault =
  | { kind: 'drop-sockets'; chat?: string }
  | { kind: 'refuse-upgrades'; seconds: number }
  | { kind: 'rate-limit-burst'; count: number; scope: 'api' | 'upgrade' | 'all' }
  | { kind: 'expire-sessions' }
  | { kind: 'service-restart' }
  | { kind: 'irc-kill'; downMs: number };

export interface TimedFault {
  atMs: number;
  fault: Fault;
}

/**
 * The faults of one run, over `durationMs`: sockets dropped at random intervals (all of them or one
 * chat's) all along; two windows of refused upgrades and four bursts of 429 (each followed by a drop
 * of every socket, so the reconnects run into them) in the first two thirds: after a streak of refusals the bot's
 * backoff may wait up to 30 s (by design), and that must be over soon after the posting for the
 * suite to stay near a minute; sessions expired twice; the service restarted once and the IRC server
 * killed once, in different thirds.
 */
export function planFaults(random: () => number, durationMs: number, chats: readonly string[]): TimedFault[] {
  const faults: TimedFault[] = [];
  const at = (from: number, to: number) => Math.round(between(random, from, to) * durationMs);
  const add = (atMs: number, fault: Fault) => faults.push({ atMs, fault });
  for (let t = between(random, 800, 2500); t < durationMs - 1500; t += between(random, 800, 3500)) {
    add(Math.round(t), random() < 0.5 ? { kind: 'drop-sockets' } : { kind: 'drop-sockets', chat: pick(random, chats) });
  }
  for (const [from, to] of [[0.1, 0.3], [0.35, 0.55]] as const) {
    const start = at(from, to);
    add(start, { kind: 'refuse-upgrades', seconds: Math.round(between(random, 1, 2) * 10) / 10 });
    add(start + 50, { kind: 'drop-sockets' });
  }
  for (const [from, to] of [[0.05, 0.2], [0.2, 0.35], [0.35, 0.5], [0.5, 0.65]] as const) {
    const start = at(from, to);
    add(start, { kind: 'rate-limit-burst', count: 2 + Math.floor(random() * 3), scope: pick(random, ['api', 'upgrade', 'all'] as const) });
    // Every chat reconnects into the burst, so it is used up at once (by one chat alone, it can last
    // long after the fault period, each 429 doubling that chat's backoff).
    add(start + 50, { kind: 'drop-sockets' });
  }
  add(at(0.15, 0.35), { kind: 'expire-sessions' });
  add(at(0.65, 0.85), { kind: 'expire-sessions' });
  const [restartThird, ircThird] = random() < 0.5 ? [1, 2] : [2, 1];
  add(at(restartThird / 3 + 0.05, (restartThird + 1) / 3 - 0.1), { kind: 'service-restart' });
  add(at(ircThird / 3 + 0.05, (ircThird + 1) / 3 - 0.1), { kind: 'irc-kill', downMs: Math.round(between(random, 1000, 2500)) });
  return faults.sort((a, b) => a.atMs - b.atMs);
}

/**
 * The admin API on a connection pool of its own, renewed after the service restarted: the restart
 * cuts every connection, and a pooled one found dead by a POST would leave it unknown whether the
 * post was stored.
 */
export class AdminLink {
  private dispatcher: Agent;

  constructor(private readonly svc: TestService) {
    this.dispatcher = this.newAgent();
  }

  async call(path: string, body: unknown = {}): Promise<any> {
    const response = await request(`${this.svc.baseUrl}/_admin/${path}`, {
      method: 'POST', dispatcher: this.dispatcher, body: JSON.stringify(body),
      headers: { authorization: `Bearer ${this.svc.service.adminToken}`, 'content-type': 'application/json' },
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`admin ${path} failed: ${response.statusCode} ${text}`);
    return text ? parseJson(text) : undefined;
  }

  async stats(): Promise<any> {
    const response = await request(`${this.svc.baseUrl}/_admin/stats`, {
      dispatcher: this.dispatcher, headers: { authorization: `Bearer ${this.svc.service.adminToken}` },
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`admin stats failed: ${response.statusCode} ${text}`);
    return parseJson(text);
  }

  /** After a restart: a fresh pool, once the service answers again. */
  async renew(timeoutMs = 10_000): Promise<void> {
    const old = this.dispatcher;
    this.dispatcher = this.newAgent();
    void old.destroy().catch(() => undefined);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await this.stats();
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  post(batch: PostBatch): Promise<any> {
    return this.call('chats/messages', { chat: batch.chat, group: 'demo', user: DEMO[batch.who][0], message: batch.message, count: batch.count });
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  private newAgent(): Agent {
    return new Agent({ connect: { ca: this.svc.service.ca } });
  }
}

/**
 * A closable gate for the posters: the service's restart waits until no post is in flight and holds
 * new ones until the service is back, so every post is either stored or known not to be.
 */
export class PostGate {
  private closedUntil: Promise<void> | undefined;
  private reopen: () => void = () => undefined;
  private inFlight = 0;
  private drained: (() => void) | undefined;

  async enter(): Promise<void> {
    while (this.closedUntil) await this.closedUntil;
    this.inFlight += 1;
  }

  leave(): void {
    this.inFlight -= 1;
    if (this.inFlight === 0) this.drained?.();
  }

  /** Closes the gate and resolves once the posts in flight are done. */
  async close(): Promise<void> {
    this.closedUntil = new Promise((resolve) => {
      this.reopen = resolve;
    });
    if (this.inFlight > 0) await new Promise<void>((resolve) => {
      this.drained = resolve;
    });
    this.drained = undefined;
  }

  open(): void {
    this.closedUntil = undefined;
    this.reopen();
  }
}

/**
 * Watches IRC channels across kills of the server: each connection is a raw IrcWatcher; what they
 * saw adds up. The test reconnects it once the server is back (before the relay may rejoin).
 */
export class IrcAudience {
  private readonly watchers: IrcWatcher[] = [];

  constructor(
    private readonly server: IrcServer,
    readonly nick: string,
    private readonly channels: readonly string[],
  ) {}

  async connect(password?: string): Promise<void> {
    this.watchers.push(await IrcWatcher.connect(this.server.port, this.nick, [...this.channels], password));
  }

  /** The current connection. */
  get current(): IrcWatcher {
    return this.watchers.at(-1)!;
  }

  /** The relay's lines in `channel`, in order, over every connection, the anti-ping zero-width spaces taken out. */
  relayed(channel: string, relayNick: RegExp): string[] {
    return this.relayedPerConnection(channel, relayNick).flat();
  }

  /** The same, one list per connection of the watcher (a new one after each kill of the server). */
  relayedPerConnection(channel: string, relayNick: RegExp): string[][] {
    return this.watchers.map((watcher) => watcher.said
      .filter((s) => s.command === 'PRIVMSG' && s.target.toLowerCase() === channel.toLowerCase() && relayNick.test(s.nick))
      .map((s) => s.text.replaceAll('\u200b', '')));
  }

  /** Every nick seen joining the channels, over every connection, in order. */
  joins(): string[] {
    return this.watchers.flatMap((watcher) => watcher.lines.flatMap((line) => {
      const match = /^:([^!\s]+)!\S+ JOIN /.exec(line);
      return match ? [match[1]!] : [];
    }));
  }

  close(): void {
    for (const watcher of this.watchers) watcher.close();
  }
}

/**
 * What a channel's watcher saw over its connections, with the one repeat the relay's documented
 * guarantee allows (docs/plugins/relay-irc.md "Nothing doubled where the channel keeps its history"):
 * a server killed with lines it had taken but not yet confirmed cannot be asked about them afterwards
 * (its history died with it), so the relay sends them again. Such a repeat is the first lines of a new
 * connection equal to the last lines (at most `inFlight`) of the one before; those are dropped, and
 * counted. Anything else twice stays in the list, for the test's exact comparison to find.
 */
export function withoutResentAfterKills(perConnection: string[][], inFlight: number): { lines: string[]; resent: number } {
  const lines: string[] = [];
  let resent = 0;
  for (const connection of perConnection) {
    let repeat = Math.min(inFlight, connection.length, lines.length);
    // The longest run at the start of this connection that ends the lines before it.
    while (repeat > 0 && !connection.slice(0, repeat).every((text, i) => text === lines[lines.length - repeat + i])) repeat -= 1;
    resent += repeat;
    lines.push(...connection.slice(repeat));
  }
  return { lines, resent };
}
