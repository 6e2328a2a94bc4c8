import { join } from 'node:path';
import type { Logger } from 'pino';
import { GroupsClient } from '../api/client.js';
import { failureFields } from '../api/failure-fields.js';
import { isCertificateProblem } from '../api/retry.js';
import type { ChatMessage } from '../api/types.js';
import { Backoff, sleep } from '../chat/backoff.js';
import type { UpgradeGate } from '../chat/upgrade-gate.js';
import type { Delivery } from '../chat/sequencer.js';
import type { BotConfig } from '../config/bots-config.js';
import type { LoadedPlugin } from '../config/plugin-loader.js';
import type { GatewayBot, GatewayRouter } from '../gateway/gateway-router.js';
import type { Speaker } from '../gateway/message.js';
import type { BotInfo, ChatInfo, ChatTarget, PluginInstance } from '../pipeline/plugin.js';
import { CursorStore } from '../store/cursor-store.js';
import { OutboxFile } from '../store/outbox-file.js';
import { FILE_STORAGE, type Storage } from '../store/storage.js';
import { SideTraffic } from './side-traffic.js';
import { sayRefusedChats, setUpChats, type ChatSetupSide } from './bot-chat-setup.js';
import type { MediaFiles } from '../media/attachment.js';
import { BotPlugins, type PluginReport } from './bot-plugins.js';
import { ChatSetupError } from './chat-directory.js';
import { PostFailedError } from './chat-outbox.js';
import type { ChatRunner } from './chat-runner.js';
import { messageContext, type ContextSource } from './message-context.js';
import type { BotChanges } from './reload-plan.js';
import { BotRunners } from './reload-runners.js';
import {
  AccountNotAllowedError, credentialsOf, describeRefusal, LOGIN_RETRY_MS, loginRefusalOf, waitForLoginFix,
  waitText, type LoginConfig, type LoginRefusal,
} from './login-wait.js';

export interface BotOptions {
  config: BotConfig;
  plugins: LoadedPlugin[];
  service: { baseUrl: string; ca?: string | Buffer };
  stateDir: string;
  configDir: string;
  log: Logger;
  gate: UpgradeGate;
  /** The bots.yaml the bot came from: read again for a fixed login after a refusal, and named in messages. */
  configFile?: string;
  /** Told each time the service refuses the bot's login (the supervisor exits when every bot is refused). */
  onLoginRefused?: (bot: Bot) => void;
  /** How long a refused bot waits when bots.yaml does not change (default LOGIN_RETRY_MS, 15 minutes). */
  loginRetryMs?: number;
  /** The process's gateways (docs/gateways.md). */
  gateways?: GatewayRouter;
  /** Where the bot's state is kept (default files; Redis for a worker's unit). */
  storage?: Storage;
  /** The process's media store (env.media for its relays; default: `media` under the bot's state dir). */
  media?: MediaFiles;
}

/**
 * One bot: its client and login, its chats (each a ChatRunner), its plugin chain, its durable state
 * (cursors, outbox, plugin stores) under `<state_dir>/bots/<name>/`.
 */
export class Bot {
  readonly client: GroupsClient;
  private readonly chats = new BotRunners();
  /** bots.yaml's entry for the bot, and the process's gateways: a reload replaces them. */
  private config: BotConfig;
  private gateways: GatewayRouter | undefined;
  private readonly plugins: BotPlugins;
  /** What each message's context reads of the bot (message-context.ts). */
  private readonly contextSource: ContextSource;
  private readonly stopper = new AbortController();
  /** Aborted first thing in stop(), for plugins (env.stopping); `stopper` follows once the chats are down. */
  private readonly stoppingSignal = new AbortController();
  private readonly dir: string;
  private cursors: CursorStore | undefined;
  private outboxFile: OutboxFile | undefined;
  private info: BotInfo | undefined;
  /** The login in use: bots.yaml's, or a fixed one read again after a refusal. */
  private login: LoginConfig;
  private refusal: LoginRefusal | undefined;
  private starting: Promise<void> | undefined;
  /** Set once a start pass has set up every chat it could (the gateways stop waiting for chats then). */
  private startedOnce = false;
  /** Set first thing in stop(): no chat starts after it. */
  private stopping = false;
  /** The name the chat shows for the bot's account (its full name, else its user name), learnt at login. */
  private displayName: string | undefined;

  /** Where the bot's state is kept. */
  readonly storage: Storage;
  /** Lines each of the bot's sides handed to the gateways (the status page's "in" per side). */
  readonly linesIn = new SideTraffic();

  constructor(private readonly options: BotOptions) {
    this.storage = options.storage ?? FILE_STORAGE;
    const { config, service, log } = options;
    this.config = config;
    this.gateways = options.gateways;
    this.dir = join(options.stateDir, 'bots', config.name);
    this.login = config.login;
    this.client = new GroupsClient({ baseUrl: service.baseUrl, ca: service.ca, credentials: credentialsOf(config.login), logger: log });
    this.plugins = new BotPlugins({
      plugins: options.plugins, dir: this.dir, configDir: options.configDir, client: this.client, log,
      stopping: this.stoppingSignal.signal, stopped: this.stopper.signal,
      send: (chat, text) => this.send(chat, text),
      chats: () => this.runners.map((r) => r.info),
      gateways: options.gateways, storage: this.storage, linesIn: this.linesIn,
      ...(options.media ? { media: options.media } : {}),
    });
    options.gateways?.attach(this.gatewaySide());
    const bot = this;
    this.contextSource = {
      get bot() { return bot.info!; },
      client: this.client,
      get gateways() { return bot.gateways; },
      speaker: () => this.speaker(),
      send: (target, text, origin) => this.send(target, text, origin),
    };
  }

  /** The bot as the gateways reach it. */
  private gatewaySide(): GatewayBot {
    return {
      name: this.name,
      log: this.options.log,
      speaker: () => this.speaker(),
      chat: (key) => this.chats.find(key)?.info,
      starting: () => !this.stopping && (this.refusal !== undefined || !this.startedOnce),
      postRelayed: (chat, text, tag) => {
        const runner = this.chats.byChatId(chat.id);
        if (!runner || !runner.accepting) throw new PostFailedError(`the chat ${chat.subject} does not take posts now (closed, or the bot is stopping)`);
        return runner.post(text, undefined, tag);
      },
      endpoint: (instance) => this.plugins.endpoint(instance),
      pluginsStarted: () => this.plugins.whenStarted(),
    };
  }

  /**
   * The bot as a speaker: its voice in the gateways, under one name everywhere: bots.yaml's
   * `speaker_name`, else the name the chat shows for its account (full name, else user name), else
   * (before the first login) its bots.yaml name.
   */
  private speaker(): Speaker {
    return { platform: 'chat', id: this.info?.userId ?? '', name: this.config.speaker_name ?? this.displayName ?? this.name };
  }

  /** The bot's chats, each a ChatRunner. */
  get runners(): readonly ChatRunner[] {
    return this.chats.list;
  }

  get name(): string {
    return this.config.name;
  }

  /** Starts in the background: a service that is down at first is waited for, with backoff. */
  start(): Promise<void> {
    this.starting ??= this.startUntilDone();
    return this.starting;
  }

  /** Set while the service refuses the bot's login and the bot waits for a fix (see login-wait.ts). */
  get loginRefusal(): LoginRefusal | undefined {
    return this.refusal;
  }

  private async startUntilDone(): Promise<void> {
    const backoff = new Backoff(1000, 60_000);
    const log = this.options.log;
    while (!this.stopping) {
      try {
        await this.startOnce();
        this.startedOnce = true;
        if (this.refusal) log.info({ account: this.refusal.account }, 'the login works now');
        this.refusal = undefined;
        return;
      } catch (error) {
        const refusal = await loginRefusalOf(error, this.name, this.login, this.options.configFile);
        if (refusal) {
          await this.waitForLoginFix(refusal);
          backoff.reset();
          continue;
        }
        const delay = backoff.next() + 500;
        // A service that is down or busy is expected and said in one line; anything else keeps its stack.
        const fields = failureFields(error, ChatSetupError);
        if (isCertificateProblem(error)) {
          // Not the network's passing trouble: nothing changes until the CA is given (ca_file is read at start).
          log.error({ ...fields, delayMs: Math.round(delay) }, 'the service\'s TLS certificate is not trusted: set service.ca_file in bots.yaml to its CA file and restart; trying again meanwhile');
        } else if ('reason' in fields) log.warn({ ...fields, delayMs: Math.round(delay) }, 'bot could not start; trying again');
        else log.error({ ...fields, delayMs: Math.round(delay) }, 'bot could not start; trying again');
        await sleep(delay, this.stopper.signal);
      }
    }
  }

  /** Says a refused login once, lets the supervisor know, then waits for bots.yaml to change or the retry interval. */
  private async waitForLoginFix(refusal: LoginRefusal): Promise<void> {
    const log = this.options.log;
    const again = this.refusal !== undefined && describeRefusal(this.refusal) === describeRefusal(refusal);
    this.refusal = refusal;
    if (again) log.info({ account: refusal.account, reason: refusal.said }, 'the login is still refused; waiting for a fix');
    else log.error({ account: refusal.account, reason: refusal.said }, `${describeRefusal(refusal)} Waiting for ${this.options.configFile ?? 'bots.yaml'} to change (or ${waitText(this.options.loginRetryMs ?? LOGIN_RETRY_MS)}) to try again.`);
    this.options.onLoginRefused?.(this);
    const next = await waitForLoginFix(this.login, {
      bot: this.name, configFile: this.options.configFile, log, signal: this.stoppingSignal.signal, retryMs: this.options.loginRetryMs,
    });
    if (!next || next === this.login) return;
    this.login = next;
    this.client.session.useCredentials(credentialsOf(next));
  }

  private async startOnce(): Promise<void> {
    const config = this.config;
    // Who the bot is: the login answers it, a token's extended answer too.
    if (this.client.session.canLogIn) await this.client.login();
    else await this.client.csrf();
    const user = this.client.session.user!;
    this.displayName = user.full_name || user.user_name || undefined;
    // A login fixed in bots.yaml may be another account: plugins hold this same object.
    if (this.info) this.info.userId = user.id;
    else this.info = { name: config.name, userId: user.id };
    this.cursors ??= CursorStore.open(join(this.dir, 'cursors.jsonl'), this.storage);
    this.outboxFile ??= OutboxFile.open(join(this.dir, 'outbox.jsonl'), this.storage);
    if (!this.plugins.started) await this.plugins.start(this.info);
    const refused = await setUpChats(config.chats, this.chatSetupSide());
    // Banned from (or not in) every group it has chats in: as good as a refused login, and said as one.
    if (refused.length > 0 && this.runners.length === 0) {
      throw new AccountNotAllowedError([...new Set(refused.map((chat) => chat.group))], refused[0]!.error);
    }
    sayRefusedChats(refused);
  }

  /** What setting up chats uses of the bot (bot-chat-setup.ts); read afresh for each pass. */
  private chatSetupSide(): ChatSetupSide {
    return {
      client: this.client, log: this.options.log, config: this.config, cursors: this.cursors!, chats: this.chats,
      stopping: () => this.stopping,
      shared: {
        outboxFile: this.outboxFile!, gate: this.options.gate,
        durable: this.storage.kind === 'files' ? undefined : () => this.storage.durable(),
        deliver: (message, delivery, chat) => this.deliver(message, delivery, chat),
        relayed: (tag, message, chat) => this.gateways?.confirmed(this.name, chat, tag, message),
        chatReset: (reset) => this.plugins.reset(reset),
      },
    };
  }

  private deliver(message: ChatMessage, delivery: Delivery, chat: ChatInfo): Promise<void> {
    if (!this.plugins.started || !this.info || this.stopper.signal.aborted) return Promise.resolve();
    return this.plugins.run(messageContext(this.contextSource, message, delivery, chat));
  }

  /** Resolves once the bot has started and every chat it could set up has its socket open. */
  async connected(): Promise<void> {
    await this.start();
    await Promise.all(this.runners.map((runner) => new Promise<void>((resolve) => {
      const check = () => {
        if (!runner.settled) return;
        runner.connection.off('state', check);
        resolve();
      };
      runner.connection.on('state', check);
      check();
    })));
  }

  /** Posts into one of the bot's chats, by subject, id or ChatInfo. */
  send(target: ChatTarget, text: string, origin?: { chatId: string; msgNum: number }): Promise<ChatMessage> {
    const key = typeof target === 'string' ? target : target.id;
    const runner = this.chats.find(key);
    if (!runner) return Promise.reject(new PostFailedError(`bot ${this.name} is not in a chat ${key}`));
    return runner.post(text, origin);
  }

  /** Stops taking messages, flushes posts within `flushMs`, closes sockets, stops plugins, saves state. */
  async stop(flushMs = 5_000): Promise<void> {
    this.stopping = true;
    this.stoppingSignal.abort();
    // Chats first (they finish the message in hand and flush posts), then everything else.
    await Promise.all(this.runners.map((runner) => runner.stop(flushMs)));
    this.stopper.abort();
    await this.plugins.stop();
    this.cursors?.close();
    await this.client.close();
  }

  /**
   * Applies a reload to the running bot (reload-plan.ts says what changed; reload-apply.ts decides when
   * a bot is started again whole instead): chats whose entry went stop cleanly and leave the bot, the
   * plugin chain is swapped between messages, then new chats are set up as a start pass does (their
   * first messages meet the new chain). Answers what it did, in words.
   */
  async reload(changes: BotChanges, gateways: GatewayRouter | undefined, flushMs = 5_000): Promise<string[]> {
    this.config = changes.config;
    const newGateways = gateways !== this.gateways;
    this.gateways = gateways;
    if (newGateways) gateways?.attach(this.gatewaySide());
    for (const entry of changes.chatsRemoved) {
      // Its posts flush or stay on disk, its cursor stays; then the bot leaves it.
      await this.chats.ofEntry(`${entry.group}/${entry.chat}`)?.stop(flushMs);
      this.chats.remove(`${entry.group}/${entry.chat}`);
    }
    const said = [...changes.changes];
    if (changes.chainChanged || newGateways) {
      said.push(...(await this.plugins.reload(changes.plugins, changes.pluginsRestarted, gateways)).map((change) => `bot ${this.name}: ${change}`));
    }
    sayRefusedChats(await setUpChats(changes.chatsAdded, this.chatSetupSide()));
    // An added chat that could not be set up (no such chat without create: true, a group that refuses the bot) is said so.
    const skipped = new Set(changes.chatsAdded.filter((entry) => !this.chats.ofEntry(`${entry.group}/${entry.chat}`)).map((entry) => `bot ${this.name}: chat ${entry.chat} added`));
    return said.map((change) => (skipped.has(change) ? change.replace(/ added$/, ' could not be set up; skipped (see the log)') : change));
  }

  /** A plugin instance by its name in the chain. */
  pluginInstance(name: string): PluginInstance | undefined {
    return this.plugins.instance(name);
  }

  /** Where the bot is: `starting` (logging in, joining), `running`, `login_refused` (waiting for a fix), `stopping`. */
  get phase(): 'starting' | 'running' | 'login_refused' | 'stopping' {
    if (this.stopping) return 'stopping';
    if (this.refusal) return 'login_refused';
    return this.startedOnce ? 'running' : 'starting';
  }

  /** Its plugin instances as the operations endpoint reports them. */
  pluginReports(): PluginReport[] {
    return this.plugins.reports();
  }

  stats() {
    return {
      chats: this.runners.map((r) => ({
        chat: r.info.subject, state: r.connection.state, cursor: r.sequencer.position, socket: r.connection.stats,
        sequencer: r.sequencer.stats, outbox: { pending: r.outbox.pending, ...r.outbox.stats },
      })),
      plugins: this.plugins.stats(),
    };
  }
}
