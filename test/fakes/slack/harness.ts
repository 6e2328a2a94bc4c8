import { fileURLToPath } from 'node:url';
import type { ChatMessage, GroupsClient } from '../../../src/api/index.js';
import type { Supervisor } from '../../../src/supervisor/supervisor.js';
import { chatOf, history, makeEnv, type Env, type GatewaySpec, waitFor } from '../../helpers/supervisor.js';
import { FakeSlack, type FakeSlackOptions } from './fake-slack.js';
import { TOKENS } from './state.js';

/** The relay plugin by absolute path (until it is a built-in `use: relay-slack`). */
export const RELAY_PLUGIN = fileURLToPath(new URL('../../../plugins/relay-slack/index.ts', import.meta.url));

export interface RelaySetup {
  env: Env;
  slack: FakeSlack;
  /** A member's client (bob), to read the chats. */
  reader: GroupsClient;
  /** Starts (or starts again) the supervisor in this process and waits until it is connected. */
  start(): Promise<Supervisor>;
  /** The relay's stats (its counters and the chain's). */
  stats(): Record<string, number>;
  /** Lines in a chat's history posted by the bot (what the relay brought from Slack), oldest first. */
  relayed(subject: string): Promise<string[]>;
  /** Waits until nothing waits for Slack (the last post's answer was taken, not only sent). */
  drained(): Promise<void>;
  /** Waits until the relay's Socket Mode link has opened `count` connections in all. */
  connections(count: number): Promise<void>;
  close(): Promise<void>;
}

export interface RelaySetupOptions {
  /** `with:` of the relay, over the defaults (fake tokens, the fake's api_url, general → C0GENERAL1, random → #random). */
  with?: Record<string, unknown>;
  slack?: FakeSlackOptions;
  /** Plugins after the relay (a probe's path, for example). */
  after?: (env: Env) => Array<{ use: string; with?: Record<string, unknown> }>;
  /** bots.yaml's `gateways:` (with `with: { channels: {} }`, the relay's channels are only these). */
  gateways?: GatewaySpec[];
}

/** A local service, a fake Slack and a bots.yaml whose bot runs the relay in chats general and random (or in the gateways given). */
export async function relaySetup(options: RelaySetupOptions = {}): Promise<RelaySetup> {
  const slack = await FakeSlack.start(options.slack);
  const env = await makeEnv([]);
  env.writeConfig([{
    chats: [{ chat: 'general' }, { chat: 'random' }],
    plugins: [
      {
        use: RELAY_PLUGIN,
        with: {
          token: TOKENS.bot, app_token: TOKENS.app, api_url: slack.apiUrl,
          channels: { general: 'C0GENERAL1', random: '#random' }, request_timeout_ms: 5_000, ...options.with,
        },
      },
      ...(options.after?.(env) ?? []),
    ],
  }], options.gateways);
  const reader = env.client('bob');
  const chatIds = new Map<string, string>();
  let botUserId: string | undefined;
  const setup: RelaySetup = {
    env, slack, reader,
    start: () => env.start(),
    stats: () => (env.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-slack']!,
    async relayed(subject) {
      let id = chatIds.get(subject);
      if (!id) {
        id = (await chatOf(reader, subject))!.id;
        chatIds.set(subject, id);
      }
      botUserId ??= String((await chatOf(env.client('bot'), subject))!.chat_sub!.user_id);
      const bot = botUserId;
      return (await history(reader, id)).filter((m: ChatMessage) => String(m.user_id) === String(bot)).map((m) => m.message);
    },
    async drained() {
      await waitFor('the queue to Slack empty', () => setup.stats().queued === 0);
    },
    async connections(count) {
      await waitFor(`${count} Socket Mode connection(s)`, () => slack.socket.opened >= count && slack.socket.openConnections().length > 0);
    },
    async close() {
      await env.close();
      await slack.close();
    },
  };
  return setup;
}
