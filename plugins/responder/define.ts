import { AnsweredMarks } from './answered.js';
import { definePlugin, type PluginDefinition, type PluginEnv } from '../../src/index.js';
import { addAnnounce } from './builtins/announce.js';
import { addArchives } from './builtins/archives.js';
import { addBasics } from './builtins/basic.js';
import { addModeration } from './builtins/moderation.js';
import { builtinSpecs } from './builtins/specs.js';
import { builtinsSchema, responderOptions, type ResponderConfig } from './options.js';
import { Responder } from './responder.js';
import { addRules } from './rules.js';

/** A plugin built on the responder (defineResponder): its name, whether the built-in commands are on, and its own rules. */
export interface ResponderPluginDefinition {
  /** The plugin's name (logs, stats, its store). */
  name: string;
  /** Whether the built-in commands are on when bots.yaml does not say (default false; the responder plugin: true). */
  builtins?: boolean;
  timeoutMs?: number;
  /** Adds the plugin's own commands and patterns: `responder.command(...)`, `responder.hears(...)`. */
  setup?(responder: Responder, env: PluginEnv, options: ResponderConfig): void | Promise<void>;
}

/**
 * A plugin built on the responder: the same bots.yaml options (prefix, max_age, moderators, rules,
 * builtins, ...) and your commands on top.
 *
 *   export default defineResponder({
 *     name: 'dice',
 *     setup(r) {
 *       r.command('roll', { args: [{ name: 'sides', type: 'int', min: 2, default: 6 }], cooldown: { user: 5_000 } },
 *         ({ args, user }) => `${user} rolled ${1 + Math.floor(Math.random() * Number(args.sides))}`);
 *     },
 *   });
 */
export function defineResponder(definition: ResponderPluginDefinition): PluginDefinition<typeof responderOptions> {
  const options = responderOptions.safeExtend({ builtins: builtinsSchema.default(definition.builtins ?? false) }) as unknown as typeof responderOptions;
  return definePlugin({
    name: definition.name,
    options,
    timeoutMs: definition.timeoutMs,
    // Answers depend on the message and its chat; a user's cooldown is then kept per shard.
    shardable: true,
    async create(config, env) {
      const responder = new Responder({ prefix: config.prefix, maxAgeMs: config.max_age, maxLength: config.max_length, moderators: config.moderators, groupReaders: config.reads_group });
      addRules(responder, config.rules, config.time_zone);
      await definition.setup?.(responder, env, config);
      // Built-ins last, so a rule or the plugin's own command of the same name takes its place.
      addBuiltins(responder, config.builtins, env, config.time_zone);
      return {
        handle: (ctx, next) => responder.handle(ctx, next),
        // A chat whose history was reset starts its msg_nums again: its answered mark belongs to the old one.
        chatReset: (reset) => new AnsweredMarks(env.store).reset(reset.chat.id),
        stats: () => ({ ...responder.stats }),
      };
    },
  });
}

/** Adds the built-in commands bots.yaml leaves on, except those the responder already has (a rule or the plugin's own of that name). */
export function addBuiltins(responder: Responder, setting: ResponderConfig['builtins'], env: PluginEnv, timeZone: string): void {
  const specs = builtinSpecs(setting);
  for (const name of Object.keys(specs) as Array<keyof typeof specs>) if (responder.has(name)) delete specs[name];
  addBasics(responder, specs);
  addArchives(responder, specs, { timeZone });
  addModeration(responder, specs);
  addAnnounce(responder, specs, env);
}
