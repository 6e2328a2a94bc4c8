import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { seededRandom } from './chaos.js';
import { describeTally, planGatewayFaults, planLines, tagOf, tagsIn, tally, type Line, type Side } from './chaos-gateway.js';
import { CHANNEL, GatewayRun } from './chaos-gateway-run.js';
import type { PlatformSide } from './chaos-platforms.js';
import { waitFor } from './supervisor.js';

export interface GatewayChaosOptions {
  /** The run's name in what it prints and in its failure file. */
  name: string;
  seed: number;
  platforms: PlatformSide[];
  perSide: number;
  /** The lines, and the faults with them, are spread over this long. */
  talkingMs: number;
  cutsPerPlatform: number;
  /** How long every line may take to arrive everywhere after the last word (default 60 s). */
  settleMs?: number;
  /** Called with a function that writes what the run saw, for the test's onTestFailed. */
  onFailure: (dump: () => void) => void;
}

/**
 * One gateway chaos run (docs/chaos.md "The gateway run"): a gateway of the chat, an IRC channel and
 * the platforms' channels; every side's people talk in bursts while the faults strike; then each side
 * must have every line of the others once, in the order it was said, and none of its own. The
 * exceptions: a line on its way to IRC when the IRC server itself was killed may come twice, and so may
 * the line on its way to a platform without idempotency keys (Telegram) when the bot was killed.
 */
export async function gatewayChaos(started: Array<{ close(): unknown }>, options: GatewayChaosOptions): Promise<void> {
  const { name, seed, perSide } = options;
  const startedAt = Date.now();
  const print = (text: string) => process.stdout.write(`${name}: seed ${seed}${text}\n`);
  print(` (replay with CHAOS_SEED=${seed})`);
  const random = seededRandom(seed);
  const run = await GatewayRun.start(started, options.platforms);
  const plan = planLines(random, perSide, run.people, options.talkingMs);
  const faults = planGatewayFaults(random, options.talkingMs, options.platforms.map((platform) => platform.side), options.cutsPerPlatform);
  options.onFailure(() => {
    void (async () => {
      // The timeline, what each side said and received, for reading next to the replay.
      const file = join(tmpdir(), `groupwire-${name}-${seed}.json`);
      writeFileSync(file, JSON.stringify({ timeline: run.timeline, sent: run.sent, received: await run.received(), irc: run.audience.relayed(CHANNEL, /./) }, null, 1));
      print(` failed; what each side received is in ${file}; what happened when:\n  ${run.timeline.join('\n  ')}`);
    })();
  });

  run.t0 = Date.now();
  await Promise.all([...run.sides.map((side) => run.talk(side, plan[side]!)), run.runFaults(faults)]);
  // One last word from each side, after every fault: it must reach every other side like the rest.
  for (const side of run.sides) {
    const who = run.people[side]![0]!;
    await run.say({ side, who, tag: tagOf(side, perSide + 1), text: `${who} says ${tagOf(side, perSide + 1)}, the last word` });
  }
  const talkedAt = Date.now();

  const expectedOn = (side: Side) => run.sides.filter((s) => s !== side).flatMap((s) => run.sent[s]!.map((line) => line.tag));
  await waitFor('every line on every other side', async () => {
    const now = await run.received();
    return run.sides.every((side) => {
      const tags = new Set(now[side]!.flatMap(tagsIn));
      return expectedOn(side).every((tag) => tags.has(tag));
    });
  }, options.settleMs ?? 60_000).catch(async (error: unknown) => {
    print(` did not settle:\n  ${describeTally(tally(await run.origins(), await run.received(), run.reconnections)).join('\n  ')}`);
    throw error;
  });

  // Each origin's own record is the truth of what was said there, and in which order.
  const said = await run.origins();
  const result = tally(said, await run.received(), run.reconnections);
  print(`; arrived: ${describeTally(result).join('; ')}`);
  // Every line said is known to its own side (IRC: the server passed it on; two people's lines interleave as the server took them).
  for (const side of run.sides) {
    const sorted = (lines: Line[]) => lines.map((l) => l.tag).sort();
    expect(sorted(said[side]!), `what ${side} has of its people's lines`).toEqual(sorted(run.sent[side]!));
  }
  for (const side of run.sides) {
    for (const [origin, path] of Object.entries(result[side]!.from)) {
      expect({ lost: path.lost, doubled: path.doubled, altered: path.altered, outOfOrder: path.outOfOrder }, `${side} <- ${origin}`)
        .toEqual({ lost: [], doubled: [], altered: [], outOfOrder: undefined });
    }
    expect(result[side]!.echoed, `echoed on ${side}`).toEqual([]);
    expect(result[side]!.strangers, `untagged lines on ${side}`).toEqual([]);
  }
  // The chat has no excuse for a second copy: the bot's posts are confirmed from the history.
  expect(Object.values(result.chat!.from).flatMap((path) => path.resent)).toEqual([]);
  expect(Object.values(run.issued).every((n) => n > 0)).toBe(true);

  print(`; faults: ${run.issued['drop-chat-sockets']} chat socket drops (${run.counts.chatSocketsCut} sockets cut), ` +
    `${run.issued['platform-cut']} platform connection cuts (${options.platforms.map((p) => p.side).join(', ')}), ${run.issued['irc-kill']} IRC server kill, ` +
    `${run.issued['bot-kill']} bot kill (SIGKILL); said: ${run.sides.map((s) => `${run.sent[s]!.length} ${s}`).join(', ')}; ` +
    `talking ${((talkedAt - run.t0) / 1000).toFixed(1)} s, settling ${((Date.now() - talkedAt) / 1000).toFixed(1)} s, in all ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
}
