import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupsClient } from '../src/api/index.js';
import { buildCli, collect, start, type BuiltCli } from './helpers/built-cli.js';
import { cleanEnv, ROOT, runCli } from './helpers/cli.js';
import { DEMO, startTestService, type TestService } from './helpers/service.js';
import { chatOf, history, post, waitFor } from './helpers/supervisor.js';
import { spawn } from 'node:child_process';

// Plugins written where a user writes them: a folder of their own under the system's temp dir,
// outside the repository, with no node_modules anywhere above it. They import groupwire and zod
// all the same, and one is TypeScript. Loaded by the CLI as a child process, both as the package
// runs it (a tsc build) and as the other tests run it (the sources through tsx).

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const home = mkdtempSync(join(tmpdir(), 'gw-plugins-anywhere-'));
let svc: TestService;
let built: BuiltCli;
let client: GroupsClient;

const JS_PLUGIN = `import { z } from 'zod';
import { definePlugin, GroupsClient } from 'groupwire';

export default definePlugin({
  name: 'anywhere-js',
  options: z.strictObject({ trigger: z.string().default('!js') }),
  create(options) {
    return {
      handle(ctx, next) {
        if (ctx.message.message !== options.trigger) return next();
        // The supervisor's client is an instance of the GroupsClient this plugin imported: one groupwire.
        return ctx.reply('js answers; one groupwire: ' + (ctx.client instanceof GroupsClient)).then(() => next());
      },
    };
  },
});
`;

const TS_PLUGIN = `import { z } from 'zod';
import { definePlugin, GroupsClient, type PluginContext, type Next } from 'groupwire';
import { label } from './label.js';

interface Said { text: string }

const options = z.strictObject({ trigger: z.string().default('!ts'), times: z.number().int().min(1).default(1) });

export default definePlugin({
  name: 'anywhere-ts',
  options,
  create(opts: z.output<typeof options>) {
    return {
      handle(ctx: PluginContext, next: Next): Promise<void> {
        const said: Said = { text: ctx.message.message };
        if (said.text !== opts.trigger) return next();
        return ctx.reply(label(opts.times) + '; one groupwire: ' + (ctx.client instanceof GroupsClient)).then(() => next());
      },
    };
  },
});
`;

function botsYaml(plugins: string[]): string {
  return [
    'service:', `  base_url: ${svc.baseUrl}`, `  ca_file: ${svc.service.caFile}`,
    `state_dir: ./state-${Math.random().toString(36).slice(2)}`,
    'bots:', '  - name: anywhere', '    login: { email: bot@example.com, password: bot-demo }',
    '    chats: [{ group: demo, chat: general }]', '    plugins:', ...plugins, '',
  ].join('\n');
}

beforeAll(async () => {
  expect(existsSync(join(tmpdir(), 'node_modules'))).toBe(false);
  [svc, built] = await Promise.all([startTestService(), buildCli('test-build-plugins')]);
  client = new GroupsClient({ baseUrl: svc.baseUrl, ca: svc.service.ca, credentials: { email: DEMO.bob[0], password: DEMO.bob[1] } });
  mkdirSync(join(home, 'ts'));
  writeFileSync(join(home, 'anywhere.js'), JS_PLUGIN);
  writeFileSync(join(home, 'ts', 'anywhere.ts'), TS_PLUGIN);
  writeFileSync(join(home, 'ts', 'label.ts'), "export function label(times: number): string { return 'ts answers'.repeat(times); }\n");
}, 180_000);

afterAll(async () => {
  built?.remove();
  await svc?.close();
  rmSync(home, { recursive: true, force: true });
});

/** The built CLI, as `node dist/src/cli/main.js ARGS`. */
function builtCli(args: string[], cwd = home) {
  return collect(spawn(process.execPath, [built.main, ...args], { cwd, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** Runs `groupwire run FILE` until the bot is in #general, says `!js` and `!ts` there as bob, and waits for both answers. */
async function runAndAsk(command: string[], asks: Array<[string, string]>): Promise<void> {
  const running = start(command, home, cleanEnv());
  try {
    await waitFor('the bot in #general', () => /first start|chat socket open/.test(running.output()), 60_000);
    const general = (await chatOf(client, 'general'))!;
    for (const [ask, answer] of asks) {
      await post(svc, 'general', 'bob', ask);
      await waitFor(`the answer to ${ask}`, async () => (await history(client, String(general.id))).some((m) => m.message === answer), 60_000);
    }
  } finally {
    const result = await running.stop();
    expect(result.code, result.stdout).toBe(0);
  }
}

describe('a plugin outside the repository, with no node_modules', () => {
  it('groupwire check (built and from source) loads the .js and the .ts plugin', async () => {
    const file = join(home, 'check.yaml');
    writeFileSync(file, botsYaml(['      - use: ./anywhere.js', '      - use: ./ts/anywhere.ts', '        with: { times: 2 }']));
    for (const result of [await builtCli(['check', file]), await runCli(['check', file], cleanEnv(), home)]) {
      expect(result.stderr).toBe('');
      expect(result.stdout).toContain('anywhere: 1 chat(s), plugins: anywhere-js, anywhere-ts');
      expect(result.code).toBe(0);
    }
    expect(readdirSync(home).includes('node_modules')).toBe(false);
  }, 120_000);

  it('groupwire run, as the package runs it, answers through both plugins with the one groupwire', async () => {
    const file = join(home, 'run-built.yaml');
    writeFileSync(file, botsYaml(['      - use: ./anywhere.js', '      - use: /' + join(home, 'ts', 'anywhere.ts').slice(1)]));
    await runAndAsk([built.main, 'run', file], [['!js', 'js answers; one groupwire: true'], ['!ts', 'ts answers; one groupwire: true']]);
  }, 180_000);

  it('groupwire run from the sources (through tsx) answers through both plugins too', async () => {
    const file = join(home, 'run-source.yaml');
    writeFileSync(file, botsYaml(['      - use: ./anywhere.js', '        with: { trigger: "!js2" }', '      - use: ./ts/anywhere.ts', '        with: { trigger: "!ts2", times: 2 }']));
    await runAndAsk(['--import', TSX, join(ROOT, 'src/cli/main.ts'), 'run', file],
      [['!js2', 'js answers; one groupwire: true'], ['!ts2', 'ts answersts answers; one groupwire: true']]);
  }, 180_000);

  it('a typo in a strict with: of the .ts plugin is located, with the nearest key', async () => {
    const file = join(home, 'typo.yaml');
    const withLine = '        with: { trigger: "!x", tims: 2 }';
    writeFileSync(file, botsYaml(['      - use: ./ts/anywhere.ts', withLine]));
    const result = await builtCli(['check', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${file}:11:${withLine.indexOf('tims') + 1}: unknown key 'tims' (did you mean 'times'?) (at bots.0.plugins.0.with.tims)`);
  }, 60_000);
});

describe('groupwire new-plugin', () => {
  it('writes a TypeScript plugin that check, test-plugin and run accept at once', async () => {
    const made = await builtCli(['new-plugin', 'greeter']);
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    expect(readdirSync(join(home, 'greeter')).sort()).toEqual(['README.md', 'bots.yaml', 'greeter.test.ts', 'greeter.ts']);

    const checked = await builtCli(['check', 'greeter/bots.yaml']);
    expect(checked.stdout).toContain('greeter-bot: 1 chat(s), plugins: greeter');
    expect(checked.code).toBe(0);

    const tested = await builtCli(['test-plugin', 'greeter']);
    expect(tested.stdout).toMatch(/# pass 3\n# fail 0/);
    expect(tested.code).toBe(0);

    // The same plugin against this test's service: the bots.yaml's own service is the embedded one.
    const file = join(home, 'greeter-here.yaml');
    writeFileSync(file, botsYaml(['      - use: ./greeter/greeter.ts', '        with: { trigger: "!hi", answer: "hi there" }']));
    await runAndAsk([built.main, 'run', file], [['!hi', 'hi there']]);

    // The generated bots.yaml as it is: the embedded service, up and stopped cleanly.
    const running = start([built.main, 'run', 'greeter/bots.yaml'], home, cleanEnv());
    await waitFor('the greeter bot in #general', () => running.output().includes('greeter ready') && /first start|chat socket open/.test(running.output()), 60_000);
    expect((await running.stop()).code).toBe(0);
    // Run again: the embedded service's data is kept beside the bot's state, so the bot goes on in the
    // same conversation (without it, every second start warned "chat history reset" and began anew).
    expect(existsSync(join(home, 'greeter', '.groupwire', 'local-service.json'))).toBe(true);
    const again = start([built.main, 'run', 'greeter/bots.yaml'], home, cleanEnv());
    await waitFor('the greeter bot in #general again', () => /"msg":"chat socket open"/.test(again.output()), 60_000);
    expect((await again.stop()).code).toBe(0);
    expect(again.output()).not.toContain('chat history reset');
    expect(again.output()).not.toContain('first start');
  }, 240_000);

  it('a failing test of the plugin makes test-plugin exit 1', async () => {
    await builtCli(['new-plugin', 'failing']);
    writeFileSync(join(home, 'failing', 'extra.test.ts'), "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\ntest('fails', () => assert.equal(1, 2));\n");
    const tested = await builtCli(['test-plugin', 'failing']);
    expect(tested.stdout).toMatch(/# fail 1/);
    expect(tested.code).toBe(1);
  }, 60_000);
});
