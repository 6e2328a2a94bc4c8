import type { Client, IrcMessage } from 'irc-framework';
import type { Logger } from 'pino';
import { channelLine, type ChannelEvent, type IrcChannelLine } from './incoming.js';
import { ircClient, type ClientSettings } from './irc-client.js';
import { ircLower, type ChannelToJoin } from './routes.js';
import { NickKeeper } from './nick-keeper.js';
import { plainChannelLine } from './plain-line.js';
import { ReplayBatches } from './replay-batches.js';
import { Backoff, type Pacer } from './timing.js';

export interface LinkSettings extends ClientSettings {
  channels: ChannelToJoin[];
  reconnect: { minMs: number; maxMs: number };
}

/** How the server lets us know a line was delivered: labeled echoes, or a PING after the lines. */
export type ConfirmMode = 'labeled' | 'barrier';

export interface LinkHandlers {
  ready(mode: ConfirmMode): void;
  down(): void;
  /** We are in the channel; `time`: the server-time of our JOIN, when the server gives it. */
  joined(channelKey: string, time?: number): void;
  left(channelKey: string): void;
  /** Every line from the server, as it arrives (for delivery confirmations). */
  serverMessage(message: IrcMessage): void;
  /** A PRIVMSG or ACTION in a channel (ours too, when the server echoes them). */
  channelMessage(line: IrcChannelLine): void;
  /**
   * A channel's history as the server replayed it (a `chathistory` batch: InspIRCd's +H on join, an
   * answer to CHATHISTORY; ZNC's `znc.in/playback`), oldest first, ours included.
   */
  replayed(channel: string, lines: IrcChannelLine[]): void;
}

const JOIN_ERRORS = ['channel_is_full', 'invite_only_channel', 'banned_from_channel', 'bad_channel_key', 'too_many_channels'];
const TLS_TRUST = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME|UNABLE_TO_GET_ISSUER/;
/** A connection that lasted this long resets the backoff. */
const STABLE_MS = 30_000;
const REGISTRATION_TIMEOUT_MS = 30_000;

/**
 * The connection to the IRC server, on irc-framework with its auto-reconnect off: we reconnect
 * ourselves with backoff and jitter, join (and rejoin) the channels, take another nick when ours is in
 * use (and ask for it back later), and log the server's ERROR, K-lines and join refusals clearly.
 */
export class IrcLink {
  private readonly client: Client;
  private readonly nicks: NickKeeper;
  private readonly backoff: Backoff;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly joinedChannels = new Set<string>();
  private readonly stopper = new AbortController();
  private registered = false;
  private registeredAt = 0;
  private closeError: Error | undefined;
  private serverError: string | undefined;
  private closed: (() => void) | undefined;
  /** Goes up on every registration, so work begun on an older connection can tell it is stale. */
  generation = 0;
  mode: ConfirmMode = 'barrier';
  /** The server takes IRCv3 client tags (`message-tags`): a reply can carry `+draft/reply`. */
  clientTags = false;
  readonly counters = { connects: 0, disconnects: 0, unsafe_lines: 0 };
  private readonly replays = new ReplayBatches();
  /** True while irc-framework reads a line the relay took first (readLine): its privmsg event is that line again. */
  private readingTaken = false;

  constructor(
    private readonly settings: LinkSettings,
    private readonly bucket: Pacer,
    private readonly log: Logger,
    private readonly handlers: LinkHandlers,
  ) {
    this.backoff = new Backoff(settings.reconnect.minMs, settings.reconnect.maxMs);
    this.client = ircClient(settings, (line) => {
      this.counters.unsafe_lines += 1;
      this.log.error({ line: JSON.stringify(line) }, 'a line to IRC had CR, LF or NUL in it; they were sent as spaces');
    }, (line, read) => this.readLine(line, read));
    this.nicks = new NickKeeper(this.client, settings.nick, log, () => this.ready);
    this.listen();
  }

  start(): void {
    this.connect();
  }

  /** Says goodbye (QUIT) and closes; nothing reconnects after it. */
  async stop(): Promise<void> {
    this.stopper.abort();
    this.nicks.stop();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (!this.client.connected) {
      this.client.connection.transport?.close(true);
      return;
    }
    const closed = new Promise<void>((resolve) => {
      this.closed = resolve;
    });
    this.client.quit('groupwire relay stopping');
    const timer = setTimeout(() => this.client.connection.transport?.close(true), 2000);
    await closed;
    clearTimeout(timer);
  }

  get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  /** Registered and able to send. */
  get ready(): boolean {
    return this.registered && !this.stopped && this.client.connected;
  }

  get nick(): string {
    return this.client.user.nick;
  }

  get joinedCount(): number {
    return this.joinedChannels.size;
  }

  isJoined(channelKey: string): boolean {
    return this.joinedChannels.has(channelKey);
  }

  /** The capabilities the server offers and its ISUPPORT tokens (complete once a channel is joined). */
  serverInfo(): { caps: string[]; supports(token: string): unknown } {
    const network = this.client.network;
    return { caps: [...network.cap.available.keys()], supports: (token) => network.supports(token) };
  }

  isSelf(nick: string): boolean {
    return ircLower(nick) === ircLower(this.client.user.nick);
  }

  /** Writes one command line; false when not connected. */
  send(line: string): boolean {
    if (!this.ready) return false;
    this.client.raw(line);
    return true;
  }

  /** Drops the connection; it comes back with the usual backoff. */
  reconnect(reason: string): void {
    if (!this.client.connected) return;
    this.serverError = reason;
    this.client.connection.transport?.close(true);
  }

  /** A channel to be in from now on (joined at once when connected, and after every reconnect). */
  addChannel(channel: ChannelToJoin): void {
    if (this.settings.channels.some((c) => c.key === channel.key)) return;
    this.settings.channels.push(channel);
    void this.join(channel.key, this.generation);
  }

  /** Sends JOIN again (the server refused a line: we may not be in the channel); harmless when we are. */
  ensureJoined(channelKey: string): void {
    const generation = this.generation;
    this.later(() => void this.join(channelKey, generation, true), 500);
  }

  private connect(): void {
    if (this.stopped) return;
    this.counters.connects += 1;
    this.closeError = undefined;
    this.serverError = undefined;
    this.log.debug({ server: this.settings.server, port: this.settings.port, tls: this.settings.tls }, 'connecting to IRC');
    this.client.connect();
    const attempt = this.counters.connects;
    this.later(() => {
      if (!this.registered && attempt === this.counters.connects && !this.stopped) {
        this.log.warn('IRC registration did not finish in time; closing');
        this.client.connection.transport?.close(true);
      }
    }, REGISTRATION_TIMEOUT_MS);
  }

  private later(run: () => void, ms: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }

  private async joinAll(generation: number): Promise<void> {
    for (const channel of this.settings.channels) await this.join(channel.key, generation);
  }

  private async join(channelKey: string, generation: number, again = false): Promise<void> {
    const channel = this.settings.channels.find((c) => c.key === channelKey);
    if (!channel || (this.joinedChannels.has(channelKey) && !again)) return;
    if (!(await this.bucket.take(this.stopper.signal))) return;
    if (!this.ready || generation !== this.generation) return;
    this.client.join(channel.name, channel.joinKey);
  }

  private onRegistered(nick: string): void {
    this.registered = true;
    this.registeredAt = Date.now();
    this.generation += 1;
    const caps = this.client.network.cap;
    this.mode = caps.isEnabled('labeled-response') && caps.isEnabled('echo-message') ? 'labeled' : 'barrier';
    this.clientTags = caps.isEnabled('message-tags');
    this.log.info({ nick, caps: caps.enabled, confirm: this.mode === 'labeled' ? 'labeled-response + echo-message' : 'PING after the lines' }, 'IRC connected');
    this.nicks.onRegistered(nick);
    this.handlers.ready(this.mode);
    void this.joinAll(this.generation);
  }

  private onClosed(): void {
    const wasRegistered = this.registered;
    this.registered = false;
    this.joinedChannels.clear();
    this.replays.clear();
    this.nicks.stop();
    this.counters.disconnects += 1;
    if (wasRegistered) this.handlers.down();
    if (this.stopped) {
      this.closed?.();
      return;
    }
    if (wasRegistered && Date.now() - this.registeredAt > STABLE_MS) this.backoff.reset();
    const delayMs = Math.round(this.backoff.next());
    const reason = this.serverError ?? this.closeError?.message ?? 'closed by the server';
    const code = (this.closeError as NodeJS.ErrnoException | undefined)?.code;
    if (code && TLS_TRUST.test(code)) {
      this.log.error({ reason, code, delayMs }, 'the IRC server\'s TLS certificate is not trusted (give tls_ca_file, or check the server name); retrying');
    } else {
      this.log.warn({ reason, delayMs }, wasRegistered ? 'IRC connection lost; reconnecting' : 'IRC connection failed; retrying');
    }
    this.later(() => this.connect(), delayMs);
  }

  private listen(): void {
    const client = this.client;
    client.connection.on('message', (message) => this.handlers.serverMessage(message));
    client.on('registered', (event: { nick: string }) => this.onRegistered(event.nick));
    client.on('socket close', (error?: Error) => {
      if (error) this.closeError = error;
    });
    client.on('close', () => this.onClosed());
    client.on('join', (event: { nick: string; channel: string; time?: number }) => {
      if (!this.isSelf(event.nick)) return;
      const key = ircLower(event.channel);
      this.joinedChannels.add(key);
      this.log.info({ channel: event.channel }, 'joined IRC channel');
      this.handlers.joined(key, typeof event.time === 'number' ? event.time : undefined);
    });
    client.on('batch start', (event: { id: string; type?: string; params?: string[] }) => this.replays.start(event));
    client.on('batch end', (event: { id: string }) => {
      const replay = this.replays.end(event);
      if (replay) this.handlers.replayed(replay.channel, replay.lines);
    });
    client.on('kick', (event: { kicked: string; nick: string; channel: string; message: string }) => {
      if (!this.isSelf(event.kicked)) return;
      this.log.warn({ channel: event.channel, by: event.nick, reason: event.message }, 'kicked from IRC channel; joining again');
      this.left(event.channel, 2000);
    });
    client.on('part', (event: { nick: string; channel: string }) => {
      if (this.isSelf(event.nick)) this.left(event.channel, 2000);
    });
    client.on('irc error', (event: { error: string; reason?: string; channel?: string }) => this.onIrcError(event));
    client.on('sasl failed', (event: { reason: string; message?: string }) => {
      this.log.error({ reason: event.reason, message: event.message }, 'SASL login failed');
    });
    client.on('loggedin', (event: { account: string }) => this.log.info({ account: event.account }, 'SASL login accepted'));
    for (const kind of ['privmsg', 'action'] as const) {
      client.on(kind, (event: ChannelEvent) => {
        if (event.from_server || !event.nick || (kind === 'privmsg' && this.readingTaken)) return;
        // History a server replays (a chathistory or playback batch) was said before: the catch-up reads it.
        if (!this.replays.take(kind, event)) this.handlers.channelMessage(channelLine(kind, event));
      });
    }
  }

  /**
   * A plain line said in a joined channel (plainChannelLine) goes to the relay before irc-framework
   * reads it, then irc-framework reads it as it reads every line (its ping timer, the delivery
   * tracker's `message` listener) and its privmsg event for it is passed over: the gateway's other
   * relays do not wait for irc-framework's own work on the line (#32 part 1). Lines keep their order:
   * each is done with before the next is read.
   */
  private readLine(line: string, read: () => void): void {
    const plain = plainChannelLine(line, (channel) => this.joinedChannels.has(ircLower(channel)));
    if (plain) this.handlers.channelMessage(channelLine('privmsg', plain));
    this.readingTaken = plain !== undefined;
    try {
      read();
    } finally {
      this.readingTaken = false;
    }
  }

  private left(channel: string, rejoinMs: number): void {
    const key = ircLower(channel);
    this.joinedChannels.delete(key);
    this.handlers.left(key);
    const generation = this.generation;
    this.later(() => void this.join(key, generation), rejoinMs);
  }

  private onIrcError(event: { error: string; reason?: string; channel?: string }): void {
    if (event.error === 'irc' && this.stopped) {
      // The server's ERROR in answer to our own QUIT: the goodbye we asked for, not a problem.
      this.log.debug({ reason: event.reason }, 'IRC server closed the link after our QUIT');
    } else if (event.error === 'irc') {
      this.serverError = event.reason;
      this.log.error({ reason: event.reason }, `IRC server closed the link: ${event.reason ?? ''}`);
    } else if (event.error === 'banned_from_network') {
      this.serverError = event.reason;
      this.log.error({ reason: event.reason }, `banned from the IRC server (K-line): ${event.reason ?? ''}`);
    } else if (event.error === 'password_mismatch') {
      this.log.error('the IRC server refused the password');
    } else if (JOIN_ERRORS.includes(event.error) && event.channel) {
      this.log.error({ channel: event.channel, error: event.error, reason: event.reason }, 'cannot join IRC channel; trying again in 30 s');
      const key = ircLower(event.channel);
      const generation = this.generation;
      this.later(() => void this.join(key, generation), 30_000);
    } else if (event.error !== 'cannot_send_to_channel' && event.error !== 'not_on_channel') {
      this.log.warn({ error: event.error, reason: event.reason, channel: event.channel }, 'IRC error reply');
    }
  }
}
