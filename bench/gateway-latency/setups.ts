import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { FakeSlack } from '../../test/fakes/slack/index.js';
import { TOKENS } from '../../test/fakes/slack/index.js';
import type { IrcServer } from '../../test/helpers/irc-server.js';
import { BUILD } from '../lib/build.js';
import { stopChild, type Running } from '../lib/child.js';
import { ROOT } from '../lib/paths.js';
import type { ServiceProcess } from '../lib/service-process.js';

/**
 * The three bots.yaml files of the gateway bench, each run by `groupwire run` (the tsc build) in a
 * process of its own with a fresh state dir:
 *
 * - `gateway`: one bot with relay-irc and relay-slack, and a named gateway joining chat general, the
 *   IRC channel and the fake Slack's C0GENERAL1 (IRC ⇄ chat ⇄ Slack); `gateway-chat` is the same bot,
 *   with lines said by a chat member rather than on IRC;
 * - `bare-irc`: the same bot with relay-irc alone, mapping general to the channel (its own pair);
 * - `bare-slack`: the same bot with relay-slack alone, mapping general to C0GENERAL1.
 */
export type Setup = 'gateway' | 'gateway-chat' | 'bare-irc' | 'bare-slack';

export const IRC_CHANNEL = '#bench';
export const SLACK_CHANNEL = 'C0GENERAL1';

/**
 * The bot's posts are paced per chat, 5 a second with bursts of 10 by default: lines relayed from a
 * channel busier than that wait in the outbox (and at 100 a second fall further behind every second).
 * A bot relaying a busy channel into a chat needs reply_rate raised above the channel's rate; the bench
 * gives it twice the offered 100 lines a second.
 */
export const REPLY_RATE = { per_second: 200, burst: 50 };

export interface Sides {
  service: ServiceProcess;
  irc: IrcServer;
  slack: FakeSlack;
}

function plugins(setup: Setup, sides: Sides): unknown[] {
  const inGateway = setup === 'gateway' || setup === 'gateway-chat';
  const irc = {
    use: 'relay-irc',
    // rate: off, as in relay-latency: ngircd's penalties are off, and the relay's pacing is not what is measured.
    with: { server: '127.0.0.1', port: sides.irc.port, tls: false, nick: 'gwbot', channels: inGateway ? {} : { general: IRC_CHANNEL }, rate: 'off' },
  };
  const slack = {
    use: 'relay-slack',
    with: {
      token: TOKENS.bot, app_token: TOKENS.app, api_url: sides.slack.apiUrl,
      channels: inGateway ? {} : { general: SLACK_CHANNEL },
    },
  };
  return inGateway ? [irc, slack] : setup === 'bare-irc' ? [irc] : [slack];
}

/** groupwire's supervisor for one setup, from a bots.yaml of its own; its log (warnings and errors) goes to our stderr. */
export function startGroupwire(setup: Setup, sides: Sides, dir: string, run: string): Running {
  const gateways = setup === 'gateway' || setup === 'gateway-chat'
    ? [{ name: 'general', endpoints: [{ chat: 'general' }, { irc: IRC_CHANNEL }, { slack: SLACK_CHANNEL }] }]
    : undefined;
  return startBridge(sides.service, dir, run, plugins(setup, sides), gateways);
}

/**
 * `groupwire run` (the tsc build) with a bots.yaml of one bot, `bridge`, in chat general with these
 * plugins (and these named gateways, if any), a fresh state dir, and the bench's reply_rate.
 */
export function startBridge(service: ServiceProcess, dir: string, run: string, botPlugins: unknown[], gateways?: unknown[]): Running {
  const file = join(dir, `bots-${run}.yaml`);
  writeFileSync(file, stringify({
    service: { base_url: service.baseUrl, ca_file: service.caFile },
    state_dir: join(dir, `state-${run}`),
    log: { level: 'warn', pretty: false },
    bots: [{
      name: 'bridge',
      login: { email: 'bot@example.com', password: 'bot-demo' },
      chats: [{ group: 'demo', chat: 'general' }],
      reply_rate: REPLY_RATE,
      plugins: botPlugins,
    }],
    ...(gateways ? { gateways } : {}),
  }));
  const child = spawn(process.execPath, [join(BUILD, 'src/cli/main.js'), 'run', file], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  return { stop: () => stopChild(child) };
}
