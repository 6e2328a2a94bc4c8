import type { Chat, ChatMessage, PluginContext, Speaker } from '../../src/index.js';
import { AccessControl, checkAllow } from './access.js';
import { AnsweredMarks } from './answered.js';
import { ArgumentError, argUsage, parseArgs, specProblem, type ArgValues } from './args.js';
import { Cooldowns } from './cooldown.js';
import { CommandError, describeError } from './errors.js';
import { answerer } from './answer.js';
import { speakerKey } from './identity.js';
import { GroupReaders, readRefusal, refusalWindow } from './reads.js';
import type { CommandSpec, HearsSpec, ResponderOptions, RuleSpec } from './rule-spec.js';
import { MAX_CHAT_MESSAGE_LENGTH } from './split.js';
import { resolveTarget } from './target.js';

export type { CommandSpec, HearsSpec, ResponderOptions, RuleSpec } from './rule-spec.js';

/** What a handler returns: the answer (split when long), several answers, or nothing. */
export type Answer = string | readonly string[] | undefined | void;
/** A rule's code: gets the call (its arguments, the message, the context) and returns the answer. */
export type Handler = (call: Call) => Answer | Promise<Answer>;

/** One use of a rule: the message, its arguments or match, and a way to answer. */
export interface Call {
  readonly ctx: PluginContext;
  readonly responder: Responder;
  readonly message: ChatMessage;
  /** The command's name, or the hears rule's name. */
  readonly name: string;
  readonly kind: 'command' | 'hears';
  readonly args: ArgValues;
  /** The text after the command's name, as typed. */
  readonly argsText: string;
  /** The match of a `hears` pattern. */
  readonly match: RegExpExecArray | undefined;
  /** The chat the command acts on, for a command that declares a `target` (the one its rights were checked on). */
  readonly target: Chat | undefined;
  /** Who said it: a chat member, or someone on IRC, Slack, ... whose line a gateway relayed (ctx.sender). */
  readonly sender: Speaker;
  /** The sender's name to show (a member's display name, else user name; a nick elsewhere). */
  readonly user: string;
  /** A chat member's user id; for someone elsewhere `<platform>:<id>` (`irc:nick!user@host`), so it never passes for a member's. */
  readonly userId: string;
  /**
   * Posts the answer (split when too long), where the rule's `answerTo` says; resolves when every part
   * is posted, with the chat messages (none when it went back to IRC or Slack alone).
   */
  reply(text: string): Promise<ChatMessage[]>;
}

interface CommandEntry {
  kind: 'command';
  name: string;
  spec: CommandSpec;
  handler: Handler;
}

interface HearsEntry {
  kind: 'hears';
  name: string;
  pattern: RegExp;
  spec: HearsSpec;
  handler: Handler;
}

type Entry = CommandEntry | HearsEntry;

/** The rule a message calls on, with its argument text (commands) or its match (hears). */
interface Found {
  entry: Entry;
  argsText: string;
  match?: RegExpExecArray;
}

/**
 * Commands (`!name args`) and patterns (`hears`) with who may use them, cooldowns, typed arguments,
 * clean splitting of long answers, and each message answered at most once, even across restarts.
 */
export class Responder {
  readonly prefix: string;
  readonly maxAgeMs: number;
  readonly maxLength: number;
  readonly access: AccessControl;
  /** Who outside the group may use the rules that read it (`reads_group`): the responder's own check. @internal */
  readonly readers: GroupReaders;
  readonly cooldowns = new Cooldowns();
  private readonly commandsByName = new Map<string, CommandEntry>();
  private readonly commandList: CommandEntry[] = [];
  private readonly hearsList: HearsEntry[] = [];
  readonly stats = { answered: 0, refused: 0, cooling: 0, too_old: 0, failed: 0, repeats: 0 };

  constructor(options: ResponderOptions = {}) {
    this.prefix = options.prefix ?? '!';
    this.maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
    this.maxLength = Math.min(options.maxLength ?? MAX_CHAT_MESSAGE_LENGTH, MAX_CHAT_MESSAGE_LENGTH);
    this.access = new AccessControl(options.moderators ?? { users: [], emails: [] });
    this.readers = new GroupReaders(options.groupReaders ?? [], this.access);
  }

  /** Adds a command: `!name args`. Names are matched ignoring case. */
  command(name: string, spec: CommandSpec | Handler, handler?: Handler): this {
    const [options, run] = typeof spec === 'function' ? [{}, spec] : [spec, handler];
    if (!run) throw new TypeError(`command ${name}: no handler`);
    const problem = specProblem(options.args ?? []);
    if (problem) throw new TypeError(`command ${name}: ${problem}`);
    checkAllow(`command ${name}`, options.allow);
    const entry: CommandEntry = { kind: 'command', name, spec: options, handler: run };
    for (const key of [name, ...(options.aliases ?? [])]) {
      if (!/^\S+$/.test(key)) throw new TypeError(`command name ${JSON.stringify(key)} may not contain spaces`);
      if (this.commandsByName.has(key.toLowerCase())) throw new TypeError(`command ${key} is defined twice`);
      this.commandsByName.set(key.toLowerCase(), entry);
    }
    this.commandList.push(entry);
    return this;
  }

  /** Answers messages matching a pattern (a RegExp, or a string taken as a case-insensitive word or phrase). */
  hears(pattern: RegExp | string, spec: HearsSpec | Handler, handler?: Handler): this {
    const [options, run] = typeof spec === 'function' ? [{}, spec] : [spec, handler];
    if (!run) throw new TypeError('hears: no handler');
    checkAllow(`hears ${options.name ?? String(pattern)}`, options.allow);
    const regex = typeof pattern === 'string'
      ? new RegExp(`(?<![\\p{L}\\p{N}_])${pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\p{L}\\p{N}_])`, 'iu')
      : new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));
    this.hearsList.push({ kind: 'hears', name: options.name ?? String(pattern), pattern: regex, spec: options, handler: run });
    return this;
  }

  /** True when a command (or alias) of this name exists. */
  has(name: string): boolean {
    return this.commandsByName.has(name.toLowerCase());
  }

  /** The commands, in the order they were added. */
  commands(): ReadonlyArray<{ name: string; spec: CommandSpec }> {
    return this.commandList;
  }

  /** `!topics [n]` */
  usage(name: string): string {
    const entry = this.commandsByName.get(name.toLowerCase());
    const args = entry ? argUsage(entry.spec.args ?? []) : '';
    return `${this.prefix}${entry?.name ?? name}${args ? ` ${args}` : ''}`;
  }

  /** The commands the sender of ctx's message may use here (for !help). */
  async usableBy(ctx: PluginContext): Promise<Array<{ name: string; spec: CommandSpec }>> {
    const usable: CommandEntry[] = [];
    for (const entry of this.commandList) {
      if (entry.spec.hidden || !inChat(entry.spec, ctx)) continue;
      if (entry.spec.readsGroup && !(await this.readers.verdict(ctx).catch(() => ({ allowed: false }))).allowed) continue;
      if (await this.access.allows(entry.spec.allow, ctx).catch(() => false)) usable.push(entry);
    }
    return usable;
  }

  /**
   * The plugin's handle(): answers what it should, then lets the chain go on. Most messages match no
   * rule: those are handed on at once, with no promise of the responder's own.
   */
  handle(ctx: PluginContext, next: () => Promise<void>): Promise<void> {
    // Only what a person said, where the bot hears it first: never the bot's own voice, and a line
    // relayed into several chats is answered in one of them.
    if (!ctx.answerable) return next();
    const found = this.match(ctx);
    return found ? this.answerThenNext(ctx, found, next) : next();
  }

  private async answerThenNext(ctx: PluginContext, found: Found, next: () => Promise<void>): Promise<void> {
    try {
      await this.dispatch(ctx, found);
    } finally {
      await next();
    }
  }

  /** The rule a message calls on, if any (events and other message types call on none). */
  private match(ctx: PluginContext): Found | undefined {
    if ((ctx.message.type ?? 'chat_msg_type_normal') !== 'chat_msg_type_normal') return undefined;
    return this.find(ctx);
  }

  private find(ctx: PluginContext): Found | undefined {
    // As the speaker said it: a relayed line's `<name>` prefix is not part of the command.
    const text = ctx.text;
    if (text.startsWith(this.prefix)) {
      const [, name = '', rest = ''] = /^(\S*)\s*([\s\S]*)$/.exec(text.slice(this.prefix.length)) ?? [];
      const entry = this.commandsByName.get(name.toLowerCase());
      if (entry && inChat(entry.spec, ctx)) return { entry, argsText: rest.trim() };
    }
    for (const entry of this.hearsList) {
      if (!inChat(entry.spec, ctx)) continue;
      const match = entry.pattern.exec(text);
      if (match) return { entry, argsText: '', match };
    }
    return undefined;
  }

  private async dispatch(ctx: PluginContext, found: Found): Promise<void> {
    const message = ctx.message;
    const { entry } = found;
    const label = entry.kind === 'command' ? `${this.prefix}${entry.name}` : entry.name;
    const marks = new AnsweredMarks(ctx.store);
    if (marks.has(ctx.chat.id, message.msg_num)) {
      this.stats.repeats += 1;
      ctx.log.info({ msgNum: message.msg_num, rule: label }, 'responder: already answered this message; not again');
      return;
    }
    if (ctx.backfilled && ctx.ageMs > this.maxAgeMs) {
      this.stats.too_old += 1;
      ctx.log.info({ msgNum: message.msg_num, rule: label, ageMs: ctx.ageMs, maxAgeMs: this.maxAgeMs }, 'responder: missed while away and too old to answer now; skipped');
      return;
    }
    const answer = answerer(ctx, marks, this.maxLength, entry.spec.answerTo);
    const sender = ctx.sender;
    const who = speakerKey(sender);
    const isCommand = entry.kind === 'command';
    // The arguments are read once: during the access check when they name the target the rights are
    // checked on, else after it (a refused caller hears the refusal, not the usage).
    let args: ArgValues | undefined;
    const readArgs = (): ArgValues => (args ??= isCommand ? parseArgs(entry.spec.args ?? [], found.argsText) : {});
    const targetSpec = isCommand ? entry.spec.target : undefined;
    let target: Chat | undefined;
    const findTarget = async (): Promise<Chat> => (target ??= await resolveTarget(ctx, targetSpec!, readArgs()));
    let allowed: boolean;
    try {
      allowed = await this.access.allows(entry.spec.allow, ctx, targetSpec ? async () => (await findTarget()).user_id : undefined);
    } catch (error) {
      if (error instanceof ArgumentError) {
        await answer.post([`${error.message}. Usage: ${this.usage(entry.name)}`]);
      } else if (error instanceof CommandError) {
        await answer.post([`${label} failed: ${error.message}`]);
      } else {
        ctx.log.warn({ err: error, rule: label }, 'responder: could not check who may use this rule');
        if (isCommand) await answer.post(['Sorry, I could not check who may use that right now; try again later.']);
      }
      return;
    }
    if (!allowed) {
      this.stats.refused += 1;
      ctx.log.info({ msgNum: message.msg_num, rule: label, sender: who, target: target?.id }, 'responder: not allowed for this user');
      if (isCommand) await answer.post([`Sorry, ${label} is only for ${this.access.describe(entry.spec.allow, target?.subject)}.`]);
      return;
    }
    if (entry.spec.readsGroup && !(await this.mayRead(ctx, entry, label, answer))) return;
    try {
      readArgs();
    } catch (error) {
      if (!(error instanceof ArgumentError)) throw error;
      await answer.post([`${error.message}. Usage: ${this.usage(entry.name)}`]);
      return;
    }
    // Per sender: every line relayed from IRC or Slack is the bot's message, so user_id would make them all one user.
    const wait = this.cooldowns.remaining(label, entry.spec.cooldown, who, ctx.chat.id);
    if (wait > 0) {
      this.stats.cooling += 1;
      if (isCommand && this.cooldowns.noticeDue(label, who, wait)) {
        await answer.post([`${label} was used a moment ago; try again in ${Math.ceil(wait / 1000)} s.`]);
      }
      return;
    }
    this.cooldowns.hit(label, entry.spec.cooldown, who, ctx.chat.id);
    try {
      // A moderator passed without it: the handler still gets the chat it acts on.
      if (targetSpec) await findTarget();
      const call: Call = {
        ctx, responder: this, message, name: entry.name, kind: entry.kind, args: readArgs(), argsText: found.argsText, match: found.match,
        target, sender, user: sender.name || sender.id, userId: sender.platform === 'chat' ? sender.id : who,
        reply: (text) => answer.post([text], true),
      };
      const result = await entry.handler(call);
      const texts = typeof result === 'string' ? [result] : [...(result ?? [])];
      if (texts.length > 0) await answer.post(texts);
      this.stats.answered += 1;
    } catch (error) {
      this.stats.failed += 1;
      const { text, serious } = describeError(error);
      const detail = { err: error, msgNum: message.msg_num, rule: label, args: found.argsText };
      if (serious) ctx.log.error(detail, 'responder: command failed');
      else ctx.log.info(detail, 'responder: command refused');
      await answer.post([`${label} failed: ${text}`]).catch(() => undefined);
    }
  }

  /** A rule that shows the group's content, asked by someone who may not read it (reads.ts): refused, a command once per its cooldown with why. */
  private async mayRead(ctx: PluginContext, entry: Entry, label: string, answer: ReturnType<typeof answerer>): Promise<boolean> {
    const verdict = await this.readers.verdict(ctx).catch((error: unknown) => {
      ctx.log.warn({ err: error, rule: label }, 'responder: could not check whether the speaker may read the group');
      return { allowed: false as const, side: undefined };
    });
    if (verdict.allowed) return true;
    this.stats.refused += 1;
    const who = speakerKey(ctx.sender);
    if (verdict.side === undefined) {
      if (entry.kind === 'command') await answer.post(['Sorry, I could not check who may use that right now; try again later.']);
      return false;
    }
    ctx.log.info({ msgNum: ctx.message.msg_num, rule: label, sender: who, side: verdict.side }, 'responder: reads the group, not answered on this side');
    if (entry.kind === 'command' && this.cooldowns.noticeDue(`${label}\u0000reads`, who, refusalWindow(entry.spec.cooldown))) {
      await answer.post([readRefusal(label, ctx.chat.groupName, verdict.side)]);
    }
    return false;
  }
}

function inChat(spec: RuleSpec, ctx: PluginContext): boolean {
  return !spec.chats || spec.chats.length === 0 || spec.chats.includes(ctx.chat.subject) || spec.chats.includes(ctx.chat.id);
}
