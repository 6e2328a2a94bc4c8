import { join } from 'node:path';
import { shellWord } from '../shell-word.js';

/** The files `groupwire new-plugin NAME` writes, as functions of the plugin's name. */

/** `my-plugin` -> `myPlugin`, for identifiers in the generated code. */
function camel(name: string): string {
  return name.replace(/[-_.]+([a-z0-9])/gi, (_, c: string) => c.toUpperCase());
}

export function pluginSource(name: string): string {
  return `import { z } from 'zod';
import { definePlugin, type PluginEnv, type PluginInstance } from 'groupwire';

/**
 * The options bots.yaml gives this plugin under \`with:\`. Strict, as the built-ins' are: a misspelt
 * key is an error at \`groupwire check\` ("unknown key 'triger' (did you mean 'trigger'?)").
 */
export const options = z.strictObject({
  /** The line the plugin answers to. */
  trigger: z.string().min(1).default('!hello'),
  /** Its answer; {name} is the member's display name. */
  answer: z.string().min(1).default('Hello, {name}!'),
});

export type ${camel(name).replace(/^./, (c) => c.toUpperCase())}Options = z.output<typeof options>;

/** The answer to a member, with {name} filled in. */
export function answerFor(opts: z.output<typeof options>, member: string): string {
  return opts.answer.replaceAll('{name}', member);
}

export default definePlugin({
  name: ${JSON.stringify(name)},
  options,
  create(opts, env: PluginEnv): PluginInstance {
    env.log.info({ trigger: opts.trigger }, ${JSON.stringify(`${name} ready`)});
    return {
      // A plain (not async) handle that returns next() is the cheap way to pass a message on.
      handle(ctx, next) {
        // Only what a person said (in the chat, or on IRC or Slack through a gateway), heard here first.
        if (!ctx.answerable || ctx.backfilled || ctx.text.trim() !== opts.trigger) return next();
        return ctx.reply(answerFor(opts, ctx.sender.name)).then(() => next());
      },
    };
  },
});
`;
}

export function testSource(name: string): string {
  return `// Run with: groupwire test-plugin ${name}   (node:test, TypeScript loaded by groupwire)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChatMessage, PluginContext, PluginEnv } from 'groupwire';
import plugin, { answerFor, options } from './${name}.js';

test('options have defaults, and a misspelt key is refused', () => {
  assert.deepEqual(options.parse({}), { trigger: '!hello', answer: 'Hello, {name}!' });
  assert.equal(options.safeParse({ triger: '!hi' }).success, false);
});

test('answerFor fills in the name', () => {
  assert.equal(answerFor(options.parse({ answer: 'Hi {name}, {name}!' }), 'Bob'), 'Hi Bob, Bob!');
});

test('answers the trigger, and hands every message on', async () => {
  const replies: string[] = [];
  const log = { info() {}, warn() {}, error() {}, debug() {} };
  const instance = await plugin.create(options.parse({}), { log } as unknown as PluginEnv);
  let handedOn = 0;
  for (const text of ['!hello', 'something else']) {
    const ctx = {
      message: { message: text, display_name: 'Bob' },
      text,
      sender: { platform: 'chat', id: '7', name: 'Bob' },
      answerable: true,
      backfilled: false,
      async reply(answer: string) {
        replies.push(answer);
        return {} as ChatMessage;
      },
    } as unknown as PluginContext;
    await instance.handle!(ctx, async () => {
      handedOn += 1;
    });
  }
  assert.deepEqual(replies, ['Hello, Bob!']);
  assert.equal(handedOn, 2);
});
`;
}

export function botsYaml(name: string): string {
  return `# A bots.yaml to try the ${name} plugin. As it is, it runs against the local service inside the
# process (its demo data; client commands run from this directory find it, e.g. groupwire chat --as bob
# general). Point base_url (and ca_file, login, chats) at your own service to use it there.
service:
  base_url: embedded
  embedded:
    port: 0                   # any free port
    state: ./.groupwire/local-service.json   # the service's data, kept with the bot's state: a restart
                                             # continues the conversation
state_dir: ./.groupwire
bots:
  - name: ${name}-bot
    login:
      email: bot@example.com
      password: bot-demo
    chats:
      - { group: demo, chat: general }
    plugins:
      - use: ./${name}.ts
        with:
          trigger: "!hello"
          answer: "Hello, {name}!"
`;
}

/**
 * The plugin's README. `checkout` is the groupwire checkout the plugin was made with, or undefined when
 * groupwire runs from an installed package (`npm install groupwire`). From a checkout, the README
 * installs groupwire, its zod and TypeScript from there for an editor's type checking (groupwire is
 * not on npm yet). From an installed package, groupwire and zod are in that project's node_modules
 * already: it installs esbuild there (an optional package: it compiles the .ts on load) and TypeScript.
 */
export function readme(name: string, checkout: string | undefined, esbuildInstall = 'npm install esbuild@0.28'): string {
  const installed = checkout === undefined;
  return `# ${name}: a groupwire plugin

Written by \`groupwire new-plugin ${name}\`. groupwire loads \`${name}.ts\` directly (TypeScript, compiled
on load by esbuild), and \`groupwire\` and \`zod\` come from groupwire's own installation when this
folder has no node_modules of its own.${installed ? ` In a project that installed groupwire, esbuild is
installed once beside it (it is optional: groupwire needs it only for TypeScript plugins):

\`\`\`sh
${esbuildInstall} typescript   # in the project that installed groupwire; typescript is for type checking
\`\`\`` : ''}

| file | what |
|---|---|
| \`${name}.ts\` | the plugin: its options schema (strict) and what it does with each message |
| \`${name}.test.ts\` | its tests, with node:test |
| \`bots.yaml\` | a bot that uses it, against the local service inside the process |

Run these from where you run groupwire (\`npx groupwire\` in a checkout or a project that installed it):

\`\`\`sh
groupwire check ${name}/bots.yaml      # validates bots.yaml and the plugin's with: options
groupwire test-plugin ${name}          # runs ${name}.test.ts (node:test), TypeScript loaded as above
groupwire run ${name}/bots.yaml        # say !hello in #general (groupwire chat --as bob general)
\`\`\`

To use it in your own bots.yaml: \`- use: ./path/to/${name}/${name}.ts\` (relative to that bots.yaml) with
its options under \`with:\`. The plugin API is in groupwire's docs/bots.md ("Writing a plugin").

The code is not type-checked when it loads (types are stripped).${installed ? ` With typescript installed as
above, the project's groupwire and zod give an editor (or \`npx tsc --noEmit\`) their types.
` : ` For an editor's type checking,
install groupwire, zod and TypeScript as dev dependencies here; the folder's own copies are then used
instead of groupwire's:

\`\`\`sh
npm install --save-dev ${[checkout, join(checkout, 'node_modules', 'zod'), join(checkout, 'node_modules', 'typescript')].map(shellWord).join(' ')}   # today, from groupwire's checkout
npm install --save-dev groupwire zod typescript   # once groupwire is published on npm
\`\`\`

groupwire is not on npm yet: the first command links the checkout this plugin was made with (and its
zod and TypeScript, so there is one copy of each). Its types are those of its build, \`dist/\`, which the
checkout's \`npm start\` or \`npm run build\` made (\`npm run build\` there after pulling changes).
`}`;
}
