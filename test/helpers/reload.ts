import { expect } from 'vitest';
import type { ChatConnection } from '../../src/chat/chat-connection.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import { post, probes, range, serviceStats, waitFor, type Env } from './supervisor.js';

/** Helpers for the reload tests: messages that keep flowing while bots.yaml is reloaded, and the sockets before and after. */

/**
 * Posts a few messages into each chat, over and over, until stopped: the reload happens while messages
 * flow. `stop()` waits for the round in hand, posts one last message per chat and answers its msg_num.
 */
export function messageStream(env: Env, chats: string[]): { stop(): Promise<Map<string, number>>; first: Map<string, number>; rounds(count: number): Promise<void> } {
  const first = new Map<string, number>();
  let running = true;
  let round = 0;
  const loop = (async () => {
    while (running) {
      for (const chat of chats) {
        const last = await post(env.svc, chat, round % 2 ? 'carol' : 'bob', `flow ${chat} ${round}.{n}`, 3);
        if (!first.has(chat)) first.set(chat, last.msg_num - 2);
      }
      round += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    first,
    /** Resolves once `count` more rounds were posted (messages went on flowing after a reload). */
    async rounds(count) {
      const until = round + count;
      await waitFor(`${count} more rounds of messages`, () => round >= until);
    },
    async stop() {
      running = false;
      await loop;
      const last = new Map<string, number>();
      for (const chat of chats) last.set(chat, (await post(env.svc, chat, 'carol', `flow ${chat} end`)).msg_num);
      return last;
    },
  };
}

/**
 * Waits until the recorder `key` has seen each chat up to its last msg_num, and checks it saw each one
 * once, in order (the recorder sees the bot's own posts too, so the msg_nums have no gaps).
 */
export async function expectEveryMessageOnce(key: string, first: Map<string, number>, last: Map<string, number>): Promise<void> {
  const seenIn = (chat: string) => (probes().seen[key] ?? []).filter((s) => s.chat === chat).map((s) => s.msgNum);
  await waitFor('every message handed on', () => [...last].every(([chat, msgNum]) => seenIn(chat).includes(msgNum)), 30_000);
  for (const [chat, msgNum] of last) {
    const seen = seenIn(chat).filter((n) => n >= first.get(chat)!);
    expect(seen, `the messages of ${chat}`).toEqual(range(first.get(chat)!, msgNum));
  }
}

/** Each chat's socket as it is now: the ChatConnection object and how often it opened. */
export interface SocketSnapshot {
  connections: Map<string, { connection: ChatConnection; opened: number }>;
  /** The service's own count of socket upgrades accepted. */
  accepted: number;
  open: number;
}

export async function socketSnapshot(env: Env, supervisor: Supervisor): Promise<SocketSnapshot> {
  const connections = new Map<string, { connection: ChatConnection; opened: number }>();
  for (const bot of supervisor.bots) {
    for (const runner of bot.runners) connections.set(`${bot.name}/${runner.info.subject}`, { connection: runner.connection, opened: runner.connection.stats.opened });
  }
  const stats = await serviceStats(env.svc);
  return { connections, accepted: stats.sockets.accepted, open: stats.open_sockets };
}

/** The chats named kept their sockets: the same ChatConnection, opened no more often, still open. */
export function expectSocketsUntouched(before: SocketSnapshot, supervisor: Supervisor, chats: string[]): void {
  for (const key of chats) {
    const [botName, subject] = key.split('/') as [string, string];
    const runner = supervisor.bots.find((bot) => bot.name === botName)?.runners.find((r) => r.info.subject === subject);
    expect(runner, `chat ${key} still runs`).toBeDefined();
    expect(runner!.connection, `chat ${key} has the same ChatConnection`).toBe(before.connections.get(key)!.connection);
    expect(runner!.connection.stats.opened, `chat ${key} opened no new socket`).toBe(before.connections.get(key)!.opened);
    expect(runner!.connection.state).toBe('open');
  }
}
