import type { AllowSpec } from '../access.js';
import type { CooldownSpec } from '../cooldown.js';
import type { AnswerTo } from '../answer.js';

export const BUILTIN_NAMES = ['help', 'ping', 'topics', 'search', 'activity', 'close', 'reopen', 'subject', 'announce'] as const;
export type BuiltinName = (typeof BUILTIN_NAMES)[number];

/** What bots.yaml may change of a built-in command. */
export interface BuiltinOverride {
  allow?: AllowSpec;
  cooldown?: CooldownSpec;
  aliases?: string[];
  chats?: string[];
  answer_to?: AnswerTo;
}

/** A built-in's rule options, as its command() takes them. */
export interface BuiltinSpec {
  allow?: AllowSpec;
  cooldown?: CooldownSpec;
  aliases?: string[];
  chats?: string[];
  answerTo?: AnswerTo;
}

/** The built-ins that are on, each with its allow and cooldown (defaults merged with bots.yaml). */
export type BuiltinSpecs = Partial<Record<BuiltinName, BuiltinSpec>>;

/** Who may use each built-in unless bots.yaml says otherwise. */
const DEFAULT_ALLOW: Partial<Record<BuiltinName, AllowSpec>> = {
  // The activity log is for those the service would show it to: moderators (view_activity).
  activity: { moderators: true },
  close: { chat_owner: true, moderators: true },
  reopen: { chat_owner: true, moderators: true },
  subject: { chat_owner: true, moderators: true },
  // A topic goes to every member of the group by mail: the group's moderators only.
  announce: { moderators: true },
};

/** Calls to the service are not free: a small per-chat cooldown unless bots.yaml says otherwise. */
const DEFAULT_COOLDOWN: Partial<Record<BuiltinName, CooldownSpec>> = {
  topics: { chat: 5_000 },
  search: { user: 5_000 },
  activity: { chat: 5_000 },
  announce: { user: 10_000 },
};

/** `builtins: true | false | { name: false | { allow, cooldown, aliases, chats } }` → the specs of those on. */
export function builtinSpecs(setting: boolean | Partial<Record<BuiltinName, boolean | BuiltinOverride>>): BuiltinSpecs {
  const specs: BuiltinSpecs = {};
  for (const name of BUILTIN_NAMES) {
    const entry = typeof setting === 'boolean' ? setting : (setting[name] ?? true);
    if (entry === false) continue;
    const override = entry === true ? {} : entry;
    specs[name] = {
      allow: override.allow ?? DEFAULT_ALLOW[name],
      cooldown: override.cooldown ?? DEFAULT_COOLDOWN[name],
      aliases: override.aliases,
      chats: override.chats,
      answerTo: override.answer_to,
    };
  }
  return specs;
}
