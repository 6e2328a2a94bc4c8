import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { buildOnce, BUILD } from './lib/build.js';
import { stopChild, type Running } from './lib/child.js';
import { member } from './lib/member.js';
import { ROOT } from './lib/paths.js';
import { report, type Figure } from './lib/report.js';
import { startServiceProcess, type ServiceProcess } from './lib/service-process.js';
import { spread, type Spread } from './lib/stats.js';
import { Marks, type Times } from './gateway-latency/marks.js';
import { watchChat } from './gateway-latency/observers.js';
import { REPLY_RATE } from './gateway-latency/setups.js';
import { chatSource, saySteadily, untilFlowing, type Source } from './gateway-latency/traffic.js';
import { DiscordBench } from './gateway-platforms/discord.js';
import { HttpBench } from './gateway-platforms/http.js';
import { MattermostBench } from './gateway-platforms/mattermost.js';
import { MatrixBench } from './gateway-platforms/matrix.js';
import { RocketchatBench } from './gateway-platforms/rocketchat.js';
import { TelegramBench } from './gateway-platforms/telegram.js';
import { XmppBench } from './gateway-platforms/xmpp.js';
import { ZulipBench } from './gateway-platforms/zulip.js';
import type { BenchPlatform } from './gateway-platforms/platform.js';
import { Conditions, describe } from './gateway-platforms/conditions.js';
import { FreshEachSetup } from './gateway-platforms/fresh.js';

/**
 * The gateway platforms bench (issue #18): lines at PER_SECOND through one bot whose chat general is in
 * one gateway with a channel on each platform (Discord, Matrix, XMPP, HTTP, Telegram, Mattermost, Zulip, Rocket.Chat), timed per hop, each way:
 * chat → platform (said in the chat, until the platform takes the relay's post) and platform → chat
 * (said by a person on the platform, until a chat member's socket reads the bot's post of it). The
 * baseline of each platform, in the same run: a bare client of that platform (its own client library,
 * as the relay uses it) on a chat socket of its own, passing each line on as it comes, both ways
 * (bench/lib/bare-platform-client.ts). Setups take turns in rounds, the order rotated each round.
 * GATEWAY_PLATFORMS_LINES=200 makes a quick run.
 */

/** A busy channel, under Discord's 50 requests a second for a bot (which @discordjs/rest keeps to). */
const PER_SECOND = 20;
const MEASURED = Number(process.env.GATEWAY_PLATFORMS_LINES ?? 600);
/** GATEWAY_PLATFORMS_ONLY=discord,matrix: those platforms alone (a look at one hop; the committed figures are of all of them). */
const ONLY = process.env.GATEWAY_PLATFORMS_ONLY?.split(',').map((name) => name.trim()).filter(Boolean);
const ROUNDS = 2;
const PER_ROUND = Math.ceil(MEASURED / ROUNDS);
const WARMUP = Math.min(200, PER_ROUND);
/** Warm-up lines of each platform → chat hop (the process is warm by then). */
const WARMUP_IN = Math.min(50, PER_ROUND);

/** The gateway of every platform, the bare fan-out (one bare client of every platform: the same shape), or one platform's bare client. */
type Setup = 'gateway' | 'bare-all' | `bare-${string}`;

/** Whose figures a setup's lines are kept under. */
function pathOf(setup: Setup): 'gateway' | 'bare-all' | 'bare' {
  return setup === 'gateway' || setup === 'bare-all' ? setup : 'bare';
}

function startBot(service: ServiceProcess, platforms: BenchPlatform[], dir: string, run: string): Running {
  const file = join(dir, `bots-${run}.yaml`);
  writeFileSync(file, stringify({
    service: { base_url: service.baseUrl, ca_file: service.caFile },
    state_dir: join(dir, `state-${run}`),
    log: { level: 'warn', pretty: false },
    bots: [{
      name: 'bridge',
      login: { email: 'bot@example.com', password: 'bot-demo' },
      chats: [{ group: 'demo', chat: 'general' }],
      // Lines from the platforms are the bot's posts in the chat, paced 5 a second by default: room for the bench's 20.
      reply_rate: REPLY_RATE,
      plugins: platforms.map((platform) => platform.plugin()),
    }],
    gateways: [{ name: 'general', endpoints: [{ chat: 'general' }, ...platforms.map((platform) => platform.endpoint())] }],
  }));
  // BENCH_BOT_NODE_ARGS: extra node flags for the bot (e.g. --cpu-prof), when profiling a bench.
  const nodeArgs = process.env.BENCH_BOT_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, join(BUILD, 'src/cli/main.js'), 'run', file], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  return { stop: () => stopChild(child) };
}

/** A bare client of `measured` (one platform, or all of them: the bare fan-out) in a process of its own. */
async function startBare(service: ServiceProcess, measured: BenchPlatform[]): Promise<Running> {
  const bot = await member(service, 'bot@example.com', 'bot-demo');
  const query = new URLSearchParams({ chatsub_id: bot.chatsubId, csrf: await bot.client.csrf(), no_history: 'true' });
  const settings = {
    url: `${service.baseUrl.replace(/^https:/, 'wss:')}/api/v1/chatdata?${query}`,
    headers: bot.client.authHeaders(), caFile: service.caFile, selfId: bot.userId,
    platforms: await Promise.all(measured.map(async (platform) => ({ platform: platform.point, settings: await platform.bareSettings() }))),
  };
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/lib/bare-platform-client.ts'), JSON.stringify(settings)], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((ready, fail) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) ready();
    });
    child.once('exit', (code) => fail(new Error(`the bare ${measured.map((platform) => platform.point).join('+')} client ended (${code}) before it was ready`)));
  });
  return {
    stop: async () => {
      await stopChild(child);
      await bot.client.close();
    },
  };
}

function row(label: string, path: string, s: Spread, lost: number): Array<string | number> {
  return [label, path, s.count, s.p50, s.p99, s.max, s.mean, lost];
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const service = await startServiceProcess();
  // Each local fake is started afresh for each setup (fresh.ts): every setup measures against fakes holding nothing of the
  // earlier ones. XMPP's Prosody is a server of its own, out of the bench's process, and stays (its room's history is bounded).
  const fresh = (start: () => Promise<BenchPlatform>) => () => FreshEachSetup.start(start);
  const starters: Record<string, () => Promise<BenchPlatform>> = {
    discord: fresh(() => DiscordBench.start()), matrix: fresh(() => MatrixBench.start()), xmpp: () => XmppBench.start(), http: fresh(() => HttpBench.start()),
    telegram: fresh(() => TelegramBench.start()), mattermost: fresh(() => MattermostBench.start()), zulip: fresh(() => ZulipBench.start()), rocketchat: fresh(() => RocketchatBench.start()),
  };
  const platforms: BenchPlatform[] = [];
  for (const name of ONLY ?? Object.keys(starters)) platforms.push(await starters[name]!());
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-gateway-platforms-'));
  const marks = new Marks();
  for (const platform of platforms) platform.watch(marks);
  // bob watches the chat; carol speaks in it.
  const bob = await member(service, 'bob@example.com', 'bob-demo');
  const carol = await member(service, 'carol@example.com', 'carol-demo');
  const watcher = await bob.client.openChatSocket({ chatsubId: bob.chatsubId, noHistory: true });
  watchChat(watcher, marks);
  const speaker = await carol.client.openChatSocket({ chatsubId: carol.chatsubId, noHistory: true });
  const source = chatSource(speaker);

  // The bare fan-out only where there is more than one platform to fan out to.
  const setups: Setup[] = ['gateway', ...(platforms.length > 1 ? ['bare-all' as const] : []), ...platforms.map((platform) => `bare-${platform.point}` as const)];
  const all = new Map<string, { latencies: number[]; lost: number }>();
  const rounds: Array<Array<string | number>> = [];
  const conditions = new Conditions(platforms);
  /** The gateway's and the bare fan-out's conditions each round (what the fakes held, the bench process's GC and loop delay), for the notes. */
  const measuredUnder: string[] = [];
  /** One hop's lines of one setup: kept for the totals and printed as a round's row. */
  const record = (hop: string, setup: Setup, round: number, lines: Times[], latencyOf: (times: Times) => number | undefined) => {
    const latencies = lines.flatMap((times) => latencyOf(times) ?? []);
    const key = `${hop} ${pathOf(setup)}`;
    const sum = all.get(key) ?? { latencies: [], lost: 0 };
    sum.latencies.push(...latencies);
    sum.lost += lines.length - latencies.length;
    all.set(key, sum);
    const s = spread(latencies);
    rounds.push(row(`round ${round + 1}: ${hop}`, setup, s, lines.length - latencies.length));
    process.stderr.write(`round ${round + 1} ${setup} ${hop}: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, lost ${lines.length - latencies.length}\n`);
  };
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = setups.map((_, i) => setups[(i + round) % setups.length]!);
      for (const setup of order) {
        const measuredHere = setup === 'gateway' || setup === 'bare-all' ? platforms : platforms.filter((platform) => setup === `bare-${platform.point}`);
        const until = ['chat', ...measuredHere.map((platform) => platform.point)] as const;
        // The setup's and the platform's index, not their first letters: matrix and mattermost share theirs.
        const run = `${round}${setup === 'gateway' ? 'g' : setup === 'bare-all' ? 'a' : setups.indexOf(setup)}`;
        if (round > 0 || setup !== order[0]) {
          for (const platform of platforms) if (platform instanceof FreshEachSetup) await platform.reset();
        }
        const running = setup === 'gateway' ? startBot(service, platforms, dir, run) : await startBare(service, measuredHere);
        const reading = conditions.begin();
        try {
          // chat → platform: carol speaks in the chat.
          await untilFlowing(source, marks, `p${run}`, until.at(-1)!);
          await saySteadily(source, marks, `w${run}`, WARMUP, PER_SECOND, until);
          const lines = await saySteadily(source, marks, `m${run}`, PER_ROUND, PER_SECOND, until);
          for (const platform of measuredHere) {
            record(`chat → ${platform.point}`, setup, round, lines, (t) => t.chat !== undefined && t[platform.point] !== undefined ? t[platform.point]! - t.chat : undefined);
          }
          // platform → chat: a person on each platform speaks, one platform after the other.
          for (const platform of measuredHere) {
            const from: Source = { say: (text) => void platform.say(text, setup === 'gateway' ? 'gateway' : 'bare') };
            const tag = `${run}p${platforms.indexOf(platform)}`;
            await untilFlowing(from, marks, `q${tag}`, 'chat');
            await saySteadily(from, marks, `v${tag}`, WARMUP_IN, PER_SECOND, ['chat']);
            const back = await saySteadily(from, marks, `n${tag}`, PER_ROUND, PER_SECOND, ['chat']);
            record(`${platform.point} → chat`, setup, round, back, (t) => t.sent !== undefined && t.chat !== undefined ? t.chat - t.sent : undefined);
          }
        } finally {
          const under = `round ${round + 1} ${setup}: ${describe(reading())}`;
          // The notes keep the setups the limit compares (the log has every one).
          if (setup === 'gateway' || setup === 'bare-all') measuredUnder.push(under);
          process.stderr.write(`${under}\n`);
          await running.stop();
        }
      }
    }
  } finally {
    conditions.stop();
    watcher.close();
    speaker.close();
    await bob.client.close();
    await carol.client.close();
    for (const platform of platforms) await platform.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const result = (hop: string, path: 'gateway' | 'bare-all' | 'bare') => all.get(`${hop} ${path}`) ?? { latencies: [], lost: 0 };
  const fannedOut = setups.includes('bare-all');
  const figures: Figure[] = [];
  const table: Array<Array<string | number>> = [];
  let lostInGateway = 0;
  for (const platform of platforms) {
    for (const hop of [`chat → ${platform.point}`, `${platform.point} → chat`]) {
      const gw = spread(result(hop, 'gateway').latencies);
      const all = spread(result(hop, 'bare-all').latencies);
      const bare = spread(result(hop, 'bare').latencies);
      lostInGateway += result(hop, 'gateway').lost;
      table.push(row(hop, 'gateway', gw, result(hop, 'gateway').lost));
      if (fannedOut) table.push(row(hop, 'bare fan-out client', all, result(hop, 'bare-all').lost));
      table.push(row(hop, `bare ${platform.point} client`, bare, result(hop, 'bare').lost));
      // The limit is against the baseline of the gateway's own shape: every platform on one event loop, each line to all of them.
      const against = fannedOut ? { s: all, name: 'bare fan-out client' } : { s: bare, name: `bare ${platform.point} client` };
      const meaning = `of the ${against.name}'s (lower is better)`;
      figures.push(
        { label: `gateway ${hop} p50`, value: gw.p50, unit: 'ms', baseline: { label: `${against.name} p50`, value: against.s.p50 }, ratio: gw.p50 / against.s.p50, ratioMeaning: meaning,
          limit: { text: 'p50 at most 2x the baseline\'s (#32)', ok: gw.p50 <= 2 * against.s.p50 } },
        { label: `gateway ${hop} p99`, value: gw.p99, unit: 'ms', baseline: { label: `${against.name} p99`, value: against.s.p99 }, ratio: gw.p99 / against.s.p99, ratioMeaning: meaning,
          limit: { text: 'p99 at most 2x the baseline\'s + 5 ms (#32)', ok: gw.p99 <= 2 * against.s.p99 + 5 } },
      );
      if (fannedOut) {
        figures.push({ label: `gateway ${hop} p50, against one platform alone`, value: gw.p50, unit: 'ms', baseline: { label: `bare ${platform.point} client p50`, value: bare.p50 },
          ratio: gw.p50 / bare.p50, ratioMeaning: `of the bare ${platform.point} client's, which sends to ${platform.point} alone (lower is better)` });
      }
    }
  }
  report({
    name: 'gateway-platforms',
    title: `Gateway platforms: ${MEASURED} lines a hop at ${PER_SECOND}/s through one gateway of a chat with ${platforms.map((p) => p.point).join(', ')}, each way, against a bare fan-out client of the same platforms and a bare client of each (ms)`,
    table: { columns: ['hop', 'path', 'lines', 'p50 ms', 'p99 ms', 'max ms', 'mean ms', 'lost'], rows: [...table, ...rounds] },
    figures,
    notes: [
      `One bot, chat general in one named gateway with ${platforms.map((p) => `${p.point} (${p.how})`).join(', ')}, in a groupwire process of its own (the tsc build). The baselines, each in a process of its own: the bare fan-out client (the limit's baseline: the gateway's own shape) on a ws chat socket with every platform's own client library, each chat line handed to all of them at once and each platform's line to the chat and the other platforms, no queue; and a bare client of each platform alone (one library, one platform a process). ${ROUNDS} rounds of ${PER_ROUND} measured lines after ${WARMUP} warm-up lines, the order rotated each round. Every local fake is started afresh for each setup (they run in the bench's process, where every hop is timed: fakes that kept the earlier setups' history, queues and sessions made each setup do more work per line than the one before); Prosody, a server of its own, stays.`,
      'chat → platform: from a chat member\'s socket reading the line to the platform (its server, or its local fake) taking the post. platform → chat: from just before a person on the platform says the line (Discord and Matrix: the local fake stores and dispatches it; XMPP: a person in the room sends it; HTTP: a tool POSTs it) to a chat member\'s socket reading the post of it. One clock: every end is in the bench process.',
      `The gateway relays wait for each post's answer before the next (a durable queue, one line in flight a channel, so that order holds through retries), write each line to their queue and mark it durable before posting (Discord's webhook posts, Mattermost's and Zulip's posts also note the attempt), and all ${platforms.length} run on one event loop, each line fanned out to every other side; the bare fan-out client does the same fan-out with none of that, and a bare client of one platform sends each line to that platform alone: against it a hop also carries the other platforms' sends made before it on the same event loop, in the bot and in the fakes (all in the bench's process). GATEWAY_PLATFORMS_ONLY=discord (say) runs one platform alone, gateway against its bare client. No limit is set on the platforms (Telegram's pacing is off): the figures say what the guarantees cost.`,
      `reply_rate is ${REPLY_RATE.per_second}/s (burst ${REPLY_RATE.burst}), as in the gateway latency bench: the lines from the platforms are the bot's posts in the chat.`,
      `Load average (1 min) ${loadBefore.toFixed(1)} at the start and ${loadavg()[0]!.toFixed(1)} at the end on ${cpus().length} cores.`,
      ...measuredUnder,
      ...(lostInGateway > 0 ? [`LOST: ${lostInGateway} lines through the gateway (not seen within 15 s)`] : []),
    ],
  });
  if (lostInGateway > 0) process.exitCode = 1;
}

buildOnce();
await main();
