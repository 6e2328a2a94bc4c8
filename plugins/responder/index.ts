/**
 * The responder plugin (bots.yaml `use: responder`, docs/plugins/responder.md) and its code API, for
 * plugins built on it: {@link defineResponder}, the {@link Responder} their rules are added to, and
 * the pieces it is made of (arguments, templates, cooldowns, access).
 *
 * @module groupwire/responder
 */
import { defineResponder } from './define.js';

/**
 * Responder: commands (`!name args`), keywords and patterns with reply templates, access rules,
 * cooldowns and the built-in commands (!help, !ping, !topics, !search, !activity, !close, !reopen,
 * !subject). See docs/plugins/responder.md.
 */
export default defineResponder({ name: 'responder', builtins: true });

// The code API, for plugins built on the responder.
export { defineResponder, type ResponderPluginDefinition } from './define.js';
export { Responder, type Answer, type Call, type CommandSpec, type Handler, type HearsSpec, type ResponderOptions, type RuleSpec } from './responder.js';
export { ARG_TYPES, ArgumentError, parseArgs, tokenize, type ArgSpec, type ArgType, type ArgValues, type Word } from './args.js';
export type { AnswerTo } from './answer.js';
export type { TargetSpec } from './target.js';
export type { GroupReaderEntry } from './reads.js';
export { CommandError, describeError } from './errors.js';
export { Template, TemplateError, type TemplateValue } from './template.js';
export { splitMessage, MAX_CHAT_MESSAGE_LENGTH } from './split.js';
export { Cooldowns, type CooldownSpec } from './cooldown.js';
export { AccessControl, type AllowSpec, type Moderators } from './access.js';
export { IdentityList, parseIdentity, matches as identityMatches, type Identity } from './identity.js';
export { responderOptions, type ResponderConfig } from './options.js';
