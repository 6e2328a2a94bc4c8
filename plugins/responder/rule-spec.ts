import type { AllowSpec, Moderators } from './access.js';
import type { AnswerTo } from './answer.js';
import type { ArgSpec } from './args.js';
import type { CooldownSpec } from './cooldown.js';
import type { GroupReaderEntry } from './reads.js';
import type { TargetSpec } from './target.js';

// What a rule of the responder is made of (command() and hears() take these), and the responder's options.

/** What every rule may say, a command's or a pattern's: who may use it, how often, where, and where the answer goes. */
export interface RuleSpec {
  /** Who may use it (default: everyone). */
  allow?: AllowSpec;
  /** How often it may fire, in milliseconds, at all / per user / per chat. */
  cooldown?: CooldownSpec;
  /** Only in these chats (subjects or ids). */
  chats?: readonly string[];
  description?: string;
  /** Where the answer goes: into the chat (and so every side of its gateway; default) or only back to where the command was said. */
  answerTo?: AnswerTo;
  /**
   * It shows the group's content (archive, activity): answered only to those who may read it (reads.ts:
   * the group's members, and the sides bots.yaml's `reads_group` lists); others hear why not.
   */
  readsGroup?: boolean;
}

/** A command's rule (`responder.command(name, spec, handler)`): its arguments, other names and target besides what every rule says. */
export interface CommandSpec extends RuleSpec {
  args?: readonly ArgSpec[];
  aliases?: readonly string[];
  /** Left out of !help. */
  hidden?: boolean;
  /** What the command acts on (a chat it names, else the one where it is said): `allow` is checked against it (target.ts). */
  target?: TargetSpec;
}

/** A pattern's rule (`responder.hears(pattern, spec, handler)`): fires on any message the pattern matches. */
export interface HearsSpec extends RuleSpec {
  /** A name for logs and cooldowns (default: the pattern). */
  name?: string;
}

/** How a Responder reads commands and bounds its answers (the responder plugins set them from bots.yaml). */
export interface ResponderOptions {
  prefix?: string;
  /** A command that arrives backfilled and older than this is skipped (ms; default 10 minutes). */
  maxAgeMs?: number;
  /** The longest post (default and at most 10,000 characters). */
  maxLength?: number;
  moderators?: Moderators;
  /** The sides outside the group that may use the rules that read the group's content (bots.yaml's `reads_group`). */
  groupReaders?: readonly GroupReaderEntry[];
}
