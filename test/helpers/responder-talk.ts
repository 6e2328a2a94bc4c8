import { expect } from 'vitest';
import type { GroupsClient } from '../../src/api/index.js';
import type { DemoUser } from './service.js';
import { chatOf, history, makeEnv, post, type BotSpec, type Env, waitFor } from './supervisor.js';

/** A bot with a responder against the local service, and members who talk to it (the responder's tests). */
export interface Talk {
  env: Env;
  bot: GroupsClient;
  botId: string;
  /** Posts `text` and answers the bot's next `parts` messages in that chat, joined by blank lines. */
  ask(chat: string, who: DemoUser, text: string, parts?: number): Promise<string>;
  /** Posts `text`, then `!ping`: the bot's first message after `text` must be the pong. */
  silent(chat: string, who: DemoUser, text: string): Promise<void>;
}

/** Starts the supervisor with these bots (the env is the caller's to close). */
export async function talk(bots: BotSpec[]): Promise<Talk> {
  const env = await makeEnv([]);
  try {
    env.writeConfig(bots);
    await env.start();
  } catch (error) {
    await env.close();
    throw error;
  }
  const bot = env.client('bot');
  const botId = String((await bot.login()).id);
  const ids = new Map<string, string>();
  const idOf = async (chat: string) => {
    // A subject, else an id as it is.
    if (!ids.has(chat)) ids.set(chat, (await chatOf(bot, chat))?.id ?? chat);
    return ids.get(chat)!;
  };
  const botAfter = async (chat: string, msgNum: number) =>
    (await history(bot, await idOf(chat))).filter((m) => m.msg_num > msgNum && m.user_id === botId);
  return {
    env,
    bot,
    botId,
    async ask(chat, who, text, parts = 1) {
      const asked = await post(env.svc, chat, who, text);
      const answers = await waitFor(`the answer to ${text}`, async () => {
        const after = await botAfter(chat, asked.msg_num);
        return after.length >= parts ? after : undefined;
      }, 20_000);
      return answers.map((m) => m.message).join('\n\n');
    },
    async silent(chat, who, text) {
      const said = await post(env.svc, chat, who, text);
      await post(env.svc, chat, who, '!ping');
      const first = await waitFor(`the pong after ${text}`, async () => (await botAfter(chat, said.msg_num))[0], 20_000);
      expect(first.message, `the bot answered ${text}`).toBe('pong');
    },
  };
}
