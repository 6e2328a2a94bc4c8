import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { chaosSeed, seededRandom } from './helpers/chaos.js';
import { describeTally, planGatewayFaults, planLines, SIDES, tagOf, tagsIn, tally, type Line, type Side } from './helpers/chaos-gateway.js';
import { CHANNEL, GatewayRun, PEOPLE } from './helpers/chaos-gateway-run.js';
import { waitFor } from './helpers/supervisor.js';

/**
 * The chaos suite's gateway run: one bot whose chat `general` is in a gateway with an IRC channel
 * (a real inspircd) and a Slack channel (the fake Slack). People on all three sides say 1,000 lines
 * each, in bursts, while every chat socket is dropped again and again, Slack drops or refreshes the
 * relay's socket, the IRC server is killed and comes back, and the bot itself is killed (SIGKILL) and
 * started again. Each side must then have every line of the two others once, in the order it was
 * said, and none of its own. The one exception: a line on its way to IRC when the IRC server itself
 * was killed may come twice (the server died with its confirmation, and with the history that could
 * tell). See docs/chaos.md "The gateway run"; replay with CHAOS_SEED=<seed>.
 */

const PER_SIDE = 1_000;
/** The lines, and the faults with them, are spread over this long. */
const TALKING_MS = 28_000;

const seed = chaosSeed();
const started: Array<{ close(): unknown }> = [];

afterAll(async () => {
  for (const piece of started.reverse()) await piece.close();
});

describe('chaos: a gateway', () => {
  test(`3,000 lines from chat, IRC and Slack through socket drops, an IRC server kill and a bot kill: 0 lost, 0 echoed, in order, 0 doubled but what the killed IRC server had in flight (seed ${seed})`, { timeout: 150_000 }, async ({ onTestFailed }) => {
    const startedAt = Date.now();
    process.stdout.write(`chaos-gateway: seed ${seed} (replay with CHAOS_SEED=${seed})\n`);
    const random = seededRandom(seed);
    const plan = planLines(random, PER_SIDE, PEOPLE, TALKING_MS);
    const faults = planGatewayFaults(random, TALKING_MS);
    const run = await GatewayRun.start(started);
    onTestFailed(() => {
      // The timeline, what each side said and received, and every Slack API call, for reading next to the replay.
      const file = join(tmpdir(), `groupwire-chaos-gateway-${seed}.json`);
      writeFileSync(file, JSON.stringify({
        timeline: run.timeline, sent: run.sent, chat: run.chatLog.messages, irc: run.audience.relayed(CHANNEL, /./), slackCalls: run.slack.api.calls,
      }, null, 1));
      process.stdout.write(`chaos-gateway: seed ${seed} failed; what each side received is in ${file}; what happened when:\n  ${run.timeline.join('\n  ')}\n`);
    });

    run.t0 = Date.now();
    await Promise.all([...SIDES.map((side) => run.talk(side, plan[side])), run.runFaults(faults)]);
    // One last word from each side, after every fault: it must reach both other sides like the rest.
    for (const side of SIDES) {
      const who = PEOPLE[side][0]!;
      await run.say({ side, who, tag: tagOf(side, PER_SIDE + 1), text: `${who} says ${tagOf(side, PER_SIDE + 1)}, the last word` });
    }
    const talkedAt = Date.now();

    const expectedOn = (side: Side) => SIDES.filter((s) => s !== side).flatMap((s) => run.sent[s].map((line) => line.tag));
    await waitFor('every line on both other sides', async () => {
      const now = await run.received();
      return SIDES.every((side) => {
        const tags = new Set(now[side].flatMap(tagsIn));
        return expectedOn(side).every((tag) => tags.has(tag));
      });
    }, 60_000).catch(async (error: unknown) => {
      process.stdout.write(`chaos-gateway: seed ${seed} did not settle:\n  ${describeTally(tally(await run.origins(), await run.received(), run.reconnections)).join('\n  ')}\n`);
      throw error;
    });

    // Each origin's own record is the truth of what was said there, and in which order.
    const said = await run.origins();
    const result = tally(said, await run.received(), run.reconnections);
    process.stdout.write(`chaos-gateway: seed ${seed}; arrived: ${describeTally(result).join('; ')}\n`);
    // Every line said is known to its own side (IRC: the server passed it on; two people's lines interleave as the server took them).
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
    // The chat has no excuse for a second copy: the bot's posts are confirmed from the history.
    expect(Object.values(result.chat.from).flatMap((path) => path.resent)).toEqual([]);
    expect(Object.values(run.issued).every((n) => n > 0)).toBe(true);

    process.stdout.write(`chaos-gateway: seed ${seed}; faults: ${run.issued['drop-chat-sockets']} chat socket drops (${run.counts.chatSocketsCut} sockets cut), ` +
      `${run.issued['slack-socket']} Slack socket drops/refreshes (Socket Mode connections: ${run.slack.socket.opened}), ${run.issued['irc-kill']} IRC server kill, ` +
      `${run.issued['bot-kill']} bot kill (SIGKILL); said: ${SIDES.map((s) => `${run.sent[s].length} ${s}`).join(', ')}; ` +
      `talking ${((talkedAt - run.t0) / 1000).toFixed(1)} s, settling ${((Date.now() - talkedAt) / 1000).toFixed(1)} s, in all ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`);
  });
});
