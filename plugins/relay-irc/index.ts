import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { definePlugin } from '../../src/index.js';
import { IrcCatchUp } from './catch-up.js';
import { PositionStore } from './catch-up-position.js';
import { IrcLink } from './irc-link.js';
import { relayOptions } from './options.js';
import { Outbound } from './outbound.js';
import { isOwnNick } from './own-nick.js';
import { ircLower, Routes, type ChannelToJoin } from './routes.js';
import { SentKeys } from './sent-keys.js';
import { TokenBucket, UNPACED } from './timing.js';
import { IrcToChat } from './to-chat.js';
import { ToIrc } from './to-irc.js';

/**
 * IRC relay: the IRC side of gateways. Lines the gateways send (endpoint.send) go to IRC channels, what
 * is said in the channels goes to the gateways (env.gateway.receive), with nothing lost (a durable
 * queue, lines dropped only once the server confirmed them) and nothing injected. The routing between
 * chats and channels is the core's. See docs/plugins/relay-irc.md.
 */
export default definePlugin({
  name: 'relay-irc',
  options: relayOptions,
  timeoutMs: 5_000,
  platform: {
    name: 'irc',
    channels: (options) => new Routes(options.channels).pairs(),
    channelKey: ircLower,
  },
  create(options, env) {
    const log = env.log;
    const routes = new Routes(options.channels);
    // The gateways' channels: the routes' and those bots.yaml's `gateways:` name (keys from the routes).
    // A core without gateways yet has no env.gateway: the routes' channels then.
    const channels = routes.channels(env.gateway?.channels() ?? []);
    const rate = options.rate;
    const bucket = rate === 'off' ? UNPACED : new TokenBucket(rate.lines_per_second, rate.burst);
    // What paces a channel's lines, as the backlog warning names it.
    const limit = rate === 'off' ? 'rate: off (the server\'s own flood limits)' : `rate: ${rate.lines_per_second}/s, burst ${rate.burst}`;
    const ca = options.tls_ca_file ? readFileSync(resolve(env.configDir, options.tls_ca_file), 'utf8') : undefined;

    let outbound: Outbound | undefined;
    let toChat: IrcToChat | undefined;
    let catchUp: IrcCatchUp | undefined;
    /** The connection (link.generation) whose server the catch-up was last told of. */
    let toldOf = 0;
    const link = new IrcLink({
      server: options.server,
      port: options.port ?? (options.tls ? 6697 : 6667),
      tls: options.tls,
      verify: options.tls_verify,
      ca,
      nick: options.nick,
      username: options.username,
      realname: options.realname,
      password: options.password,
      sasl: options.sasl,
      channels: [...channels],
      reconnect: { minMs: options.reconnect.min_delay_ms, maxMs: Math.max(options.reconnect.min_delay_ms, options.reconnect.max_delay_ms) },
    }, bucket, log, {
      ready: (mode) => outbound?.onReady(mode),
      down: () => outbound?.onDown(),
      joined: (key, time) => {
        outbound?.onJoined(key);
        // ISUPPORT and the capabilities are all in by the first join of a connection.
        if (toldOf !== link.generation) catchUp?.onRegistered(link.serverInfo());
        toldOf = link.generation;
        catchUp?.onJoined(key, time);
      },
      left: (key) => outbound?.onLeft(key),
      serverMessage: (message) => outbound?.onServerMessage(message),
      channelMessage: (line) => catchUp?.onLive(line),
      replayed: (channel, lines) => catchUp?.onReplayed(channel, lines),
    });
    const sent = SentKeys.open(env.dataDir, env.storage);
    outbound = new Outbound({
      dataDir: env.dataDir,
      storage: env.storage,
      nick: options.nick,
      channels,
      maxLines: options.queue.max_lines,
      warnAt: options.queue.warn_at,
      inFlight: options.queue.in_flight,
      maxAttempts: options.queue.max_attempts,
      confirmTimeoutMs: rate === 'off' ? 60_000 : Math.max(60_000, (20 / rate.lines_per_second) * 1000),
      onPosted: (line, channel, msgid) => env.gateway?.posted(line, channel, msgid),
      // A line leaving its queue is remembered as sent (it is known by the queue's key until then).
      remember: (lines) => sent.addAll(lines.flatMap((line) => line.key !== undefined ? [line.key] : [])),
    }, link, bucket, log);
    toChat = new IrcToChat(() => env.gateway, { privmsg: options.formats.to_chat, action: options.formats.to_chat_action },
      // The nick we asked for, and its nick_ forms, are ours too while we speak under another: what they say is
      // an earlier connection of this relay (still leaving, or in a replayed history), never a person.
      options.ignore_nicks, (nick) => isOwnNick(nick, options.nick, link.nick), log);
    const positions = new PositionStore(env.dataDir, env.storage);
    catchUp = new IrcCatchUp({
      positions, log, send: (line) => link.send(line),
      deliver: (line, late, position) => toChat!.onChannelMessage(line, late, position),
    });
    toChat.onTaken = (key, position) => positions.set(key, position);
    const toIrc = new ToIrc(options, routes, outbound, sent, log);
    const known = new Set(channels.map((channel) => channel.key));
    /** A gateway line for a channel not known at the start gets a queue and a JOIN (not expected: the core names them all). */
    const ensureChannel = (name: string): void => {
      const key = ircLower(name);
      if (known.has(key)) return;
      known.add(key);
      const channel: ChannelToJoin = { name, key, joinKey: undefined };
      log.warn({ channel: name }, 'a gateway sends to an IRC channel the relay was not given at start; joining it');
      outbound!.addChannel(channel);
      link.addChannel(channel);
    };
    if (outbound.queued > 0) log.info({ lines: outbound.queued }, 'lines queued for IRC before the last stop will be sent');

    env.stopping.addEventListener('abort', () => toChat!.close(), { once: true });

    return {
      start() {
        outbound!.start();
        link.start();
      },
      endpoint: {
        // Queues and returns (a synchronous file write); a full queue is said and counted in ToIrc.
        send(channel, out) {
          ensureChannel(channel);
          toIrc.send(channel, out);
        },
      },
      // The chat's history starts again: what was sent of its old one must not hide the new messages.
      chatReset(reset) {
        toIrc.chatReset(String(reset.chat.id));
      },
      async stop() {
        await outbound!.stop();
        await link.stop();
        toChat!.stop();
      },
      // The IRC connection and both queues, for the operations endpoint.
      status() {
        return {
          connection: { state: link.ready ? 'connected' : link.stopped ? 'stopped' : 'connecting', detail: `${options.server}:${options.port ?? (options.tls ? 6697 : 6667)}${link.ready ? ` as ${link.nick}` : ''}` },
          queues: { to_irc: outbound!.queued, to_chat: toChat!.waiting },
          backlogs: Object.fromEntries(Object.entries(outbound!.backlogs()).map(([channel, backlog]) => [channel, { ...backlog, limit }])),
        };
      },
      stats() {
        return {
          irc_connected: link.ready ? 1 : 0,
          irc_labeled: link.ready && link.mode === 'labeled' ? 1 : 0,
          irc_joined_channels: link.joinedCount,
          irc_connects: link.counters.connects,
          irc_disconnects: link.counters.disconnects,
          unsafe_lines_guarded: link.counters.unsafe_lines,
          queued_lines: outbound!.queued,
          in_flight_lines: outbound!.inFlight,
          ...prefixed('to_irc_', { ...toIrc.counters, ...outbound!.counters }),
          ...prefixed('to_chat_', { ...toChat!.counters, waiting: toChat!.waiting }),
          ...prefixed('catch_up_', catchUp!.counters),
        };
      },
    };
  },
});

function prefixed(prefix: string, counters: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(counters).map(([key, value]) => [`${prefix}${key}`, value]));
}
