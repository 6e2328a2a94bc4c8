import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { ChatMessage } from '../../src/api/index.js';
import type { GroupsClient } from '../../src/api/client.js';
import type { IrcAudience } from './chaos.js';
import type { IrcServer } from './irc-server.js';
import { relayPlugin } from './irc-server.js';
import type { BotSpec } from './supervisor.js';
import { history } from './supervisor.js';

/**
 * The bots the worker tests share out: `relayBots` bots of `perBot` chats each with the logger, the
 * responder and relay-irc (nick gwb<i>), and one bot `many` with logger and responder split in
 * `shards` shards over the remaining chats. Chats are named c01, c02, ...
 */
export interface ClusterLayout {
  chats: string[];
  bots: BotSpec[];
  /** chat → the bot (config name) that holds it, and its relay nick (none for the sharded bot). */
  owner: Map<string, { bot: string; nick?: string }>;
  nicks: string[];
  /** How many units the workers place: one per relay bot, one per shard. */
  units: number;
}

export const chatName = (index: number) => `c${String(index + 1).padStart(2, '0')}`;
export const channelOf = (chat: string) => `#${chat}`;

export function clusterLayout(irc: IrcServer, transcripts: string, options: { relayBots: number; perBot: number; shardedChats: number; shards: number }): ClusterLayout {
  const total = options.relayBots * options.perBot + options.shardedChats;
  const chats = Array.from({ length: total }, (_, index) => chatName(index));
  const logger = { use: 'logger', with: { dir: transcripts, format: 'jsonl', include_own: true, full_history: true, flush_interval_ms: 100 } };
  const owner = new Map<string, { bot: string; nick?: string }>();
  const bots: BotSpec[] = [];
  for (let b = 0; b < options.relayBots; b += 1) {
    const mine = chats.slice(b * options.perBot, (b + 1) * options.perBot);
    const nick = `gwb${b}`;
    for (const chat of mine) owner.set(chat, { bot: `b${b}`, nick });
    bots.push({
      name: `b${b}`, chats: mine.map((chat) => ({ chat })),
      plugins: [logger, { use: 'responder' }, relayPlugin(irc, {
        nick, channels: Object.fromEntries(mine.map((chat) => [chat, channelOf(chat)])),
        rate: { lines_per_second: 600, burst: 100 }, queue: { in_flight: 100 },
      })],
    });
  }
  const sharded = chats.slice(options.relayBots * options.perBot);
  for (const chat of sharded) owner.set(chat, { bot: 'many' });
  if (sharded.length > 0) bots.push({ name: 'many', chats: sharded.map((chat) => ({ chat })), plugins: [logger, { use: 'responder' }], ...{ shards: options.shards } } as BotSpec);
  return { chats, bots, owner, nicks: Array.from({ length: options.relayBots }, (_, b) => `gwb${b}`), units: options.relayBots + (sharded.length > 0 ? options.shards : 0) };
}

/** Every jsonl line of a chat's transcript files, in file (day) order. */
export function transcript(dir: string): ChatMessage[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort()
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as ChatMessage));
}

/** A line the relay posted into the chat from IRC: `<nick> text`, or `[time UTC] <nick> text` when it was caught up late. */
const FROM_IRC = /^(\[[^\]]+ UTC\] )?<([^>\s]+)> (.*)$/;

/**
 * The checks every worker test ends with, against the service's history (the truth): each chat's
 * transcript holds every message once in order; the relay put every message since `startedAt` on IRC
 * once, in order (the bot's own answers too); every `!ping` was answered exactly once, after it.
 * With `ircPeople` (nicks that spoke in the relays' channels): each channel's lines of those people
 * are in its chat once, in the order the audience saw them on IRC, and none of the relay's own lines
 * come back; the lines the relay posted from IRC are not chat lines it owes IRC, nor answers.
 */
export async function checkEverything(options: {
  reader: GroupsClient; layout: ClusterLayout; chatIds: Record<string, string>; transcripts: string; audience: IrcAudience;
  startedAt: Record<string, number>; botId: string; ircPeople?: RegExp;
}): Promise<{ messages: number; ircLines: number; pings: number; fromIrc: number; late: number }> {
  const { layout, audience, botId } = options;
  const counted = { messages: 0, ircLines: 0, pings: 0, fromIrc: 0, late: 0 };
  for (const chat of layout.chats) {
    const all = await history(options.reader, options.chatIds[chat]!);
    const logged = transcript(join(options.transcripts, 'demo', chat));
    expect(logged.map((m) => [m.msg_num, m.user_id, m.message]), `transcript of ${chat}`).toEqual(all.map((m) => [m.msg_num, m.user_id, m.message]));
    counted.messages += logged.length;
    const relayedFromIrc = all.filter((m) => String(m.user_id) === botId && FROM_IRC.test(m.message));
    const since = all.filter((m) => m.msg_num > options.startedAt[chat]! && !relayedFromIrc.includes(m));
    if (options.ircPeople) {
      const said = relayedFromIrc.map((m) => FROM_IRC.exec(m.message)!);
      const ownNick = new RegExp(`^${layout.owner.get(chat)!.nick ?? '(?!)'}_*$`);
      expect(said.filter((line) => ownNick.test(line[2]!)).map((line) => line[0]), `the relay's own lines back in ${chat}`).toEqual([]);
      const people = said.filter((line) => options.ircPeople!.test(line[2]!));
      expect(people.map((line) => line[3]), `IRC lines of people in ${chat}`).toEqual(audience.relayed(channelOf(chat), options.ircPeople));
      counted.fromIrc += people.length;
      counted.late += people.filter((line) => line[1] !== undefined).length;
    }
    const { nick } = layout.owner.get(chat)!;
    if (nick) {
      // A relay that found its nick still taken (a paused predecessor not yet timed out) speaks as nick_ until it regains it.
      const onIrc = audience.relayed(channelOf(chat), new RegExp(`^${nick}_*$`));
      // The bot's own answers go out under the name the chat shows for it, as everyone's lines do.
      expect(onIrc, `IRC channel of ${chat}`).toEqual(since.map((m) => `<${m.display_name}> ${m.message}`));
      counted.ircLines += onIrc.length;
    }
    const asked = since.filter((m) => m.user_id !== botId && m.message === '!ping');
    const answers = since.filter((m) => m.user_id === botId);
    expect(answers.map((m) => m.message), `answers in ${chat}`).toEqual(asked.map(() => 'pong'));
    asked.forEach((ping, k) => expect(answers[k]!.msg_num, `pong ${k + 1} of ${chat} after its ping`).toBeGreaterThan(ping.msg_num));
    counted.pings += asked.length;
  }
  return counted;
}

/** Nicks that joined the channels other than the relays' own: a second connection of one relay would show as one (nick_, nick1). */
export function strangerJoins(audience: IrcAudience, layout: ClusterLayout, watcherNick: string): string[] {
  const known = new Set([...layout.nicks.map((nick) => nick.toLowerCase()), watcherNick.toLowerCase()]);
  return audience.joins().filter((nick) => !known.has(nick.toLowerCase()));
}
