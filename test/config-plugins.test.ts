import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { checkCommand } from '../src/cli/run-command.js';
import { configPath, loadBotsConfig } from '../src/config/bots-config.js';
import { BUILTIN_PLUGINS, DEFAULT_PLUGIN_TIMEOUT_MS, loadPlugins } from '../src/config/plugin-loader.js';
import { ConfigError } from '../src/config/yaml-source.js';
import { isPluginDefinition } from '../src/pipeline/plugin.js';
import { Supervisor } from '../src/supervisor/supervisor.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURES = join(ROOT, 'test', 'fixtures', 'plugins');

// A bots.yaml in a directory of its own, away from the repository and the working directory.
const dir = mkdtempSync(join(tmpdir(), 'gw-config-plugins-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

let counter = 0;
function write(pluginLines: string[], where = dir): string {
  const file = join(where, `bots-${++counter}.yaml`);
  writeFileSync(file, [
    'service:', '  base_url: embedded', 'bots:', '  - name: a',
    '    login: { email: bot@example.com, password: pw }', '    chats: [{ group: g, chat: c }]',
    '    plugins:', ...pluginLines,
  ].join('\n'));
  return file;
}

async function plugins(pluginLines: string[], where = dir) {
  return loadPlugins(await loadBotsConfig(write(pluginLines, where), {}), 0);
}

async function problems(pluginLines: string[]): Promise<string[]> {
  const error = await plugins(pluginLines).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}

describe('plugin loading', () => {
  it('built-in names load with their default options and the default timeout', async () => {
    expect([...BUILTIN_PLUGINS]).toEqual(['logger', 'responder', 'relay-slack', 'relay-irc', 'relay-discord', 'relay-matrix', 'relay-telegram', 'relay-mattermost', 'relay-zulip', 'relay-rocketchat', 'relay-xmpp', 'http-api', 'group-mail']);
    const loaded = await plugins(['      - use: logger', '      - use: responder']);
    expect(loaded.map((p) => [p.name, p.timeoutMs])).toEqual([['logger', DEFAULT_PLUGIN_TIMEOUT_MS], ['responder', DEFAULT_PLUGIN_TIMEOUT_MS]]);
    expect(loaded[0]!.options).toMatchObject({ dir: './transcripts', format: ['jsonl'] });
    expect(loaded[1]!.options).toMatchObject({ prefix: '!' });
    for (const p of loaded) expect(isPluginDefinition(p.definition)).toBe(true);
  });

  it('with: options are validated and transformed by the plugin schema; timeout_ms overrides', async () => {
    const loaded = await plugins(['      - use: responder', '        with: { prefix: "?" }', '        timeout_ms: 1234']);
    expect(loaded[0]).toMatchObject({ name: 'responder', options: { prefix: '?' }, timeoutMs: 1234 });
  });

  it('a relative path is resolved against the bots.yaml directory, not the working directory', async () => {
    const nested = join(dir, 'deep', 'er');
    mkdirSync(nested, { recursive: true });
    const use = relative(nested, join(FIXTURES, 'greeter.ts'));
    expect(use.startsWith('..')).toBe(true);
    const cwd = vi.spyOn(process, 'cwd').mockReturnValue('/');
    const loaded = await plugins([`      - use: ${use}`, '        with: { greeting: hey }'], nested);
    expect(cwd).not.toHaveBeenCalled();
    expect(loaded[0]).toMatchObject({ name: 'fixture-greeter', options: { greeting: 'hey', times: 1 }, timeoutMs: 2_500 });
  });

  it('a ./ path next to bots.yaml', async () => {
    const local = join(dir, 'local');
    mkdirSync(local, { recursive: true });
    writeFileSync(join(local, 'plain.mjs'), [
      `import { z } from ${JSON.stringify(join(ROOT, 'node_modules', 'zod', 'index.js'))};`,
      "export default { name: 'plain', options: z.object({ n: z.number().default(3) }), timeoutMs: 42, create: () => ({}) };",
    ].join('\n'));
    const loaded = await plugins(['      - use: ./local/plain.mjs', '        timeout_ms: 7']);
    expect(loaded[0]).toMatchObject({ name: 'plain', options: { n: 3 }, timeoutMs: 7 });
  });

  it('an absolute path, and a module exporting `plugin` instead of a default', async () => {
    const loaded = await plugins([`      - use: ${join(FIXTURES, 'named-export.js')}`, `      - use: ${join(FIXTURES, 'greeter.ts')}`]);
    expect(loaded.map((p) => [p.name, p.timeoutMs])).toEqual([['fixture-named', DEFAULT_PLUGIN_TIMEOUT_MS], ['fixture-greeter', 2_500]]);
  });

  it('a package that is not installed gives a located, named error', async () => {
    const [problem, ...rest] = await problems(['      - use: groupwire-no-such-plugin-pkg']);
    expect(rest).toEqual([]);
    expect(problem).toMatch(/^.*bots-\d+\.yaml:8:14: no plugin named groupwire-no-such-plugin-pkg: the built-ins are logger, responder, relay-slack, relay-irc, relay-discord, relay-matrix, relay-telegram, relay-mattermost, relay-zulip, relay-rocketchat, relay-xmpp, http-api, group-mail \('groupwire plugins' lists them\), .*no package of that name is installed next to bots\.yaml$/);
  });

  it('a package installed next to bots.yaml is found from there', async () => {
    const pkg = join(dir, 'node_modules', 'gw-fixture-pkg');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'gw-fixture-pkg', type: 'module', main: 'index.js' }));
    writeFileSync(join(pkg, 'index.js'), "export default { name: 'from-pkg', options: { safeParse: (v) => ({ success: true, data: v }) }, create: () => ({}) };");
    const loaded = await plugins(['      - use: gw-fixture-pkg', '        with: { any: 1 }']);
    expect(loaded[0]).toMatchObject({ name: 'from-pkg', options: { any: 1 } });
  });

  it('an ESM-only package (exports with only an import condition) is found too', async () => {
    const pkg = join(dir, 'node_modules', 'gw-esm-only');
    mkdirSync(join(pkg, 'lib'), { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'gw-esm-only', type: 'module', exports: { '.': { import: './lib/plugin.js' } } }));
    writeFileSync(join(pkg, 'lib', 'plugin.js'), "export default { name: 'esm-only', options: { safeParse: (v) => ({ success: true, data: v }) }, create: () => ({}) };");
    const loaded = await plugins(['      - use: gw-esm-only']);
    expect(loaded[0]).toMatchObject({ name: 'esm-only' });
  });

  it('a fixture plugin rejects its own bad options inside with', async () => {
    const use = join(FIXTURES, 'greeter.ts');
    const list = await problems([`      - use: ${use}`, '        with: { greeting: 5, times: 0 }']);
    expect(list).toHaveLength(2);
    expect(list[0]).toMatch(/:9:27: Invalid input: expected string, received number \(at bots\.0\.plugins\.0\.with\.greeting\)$/);
    expect(list[1]).toMatch(/:9:37: .*>=1.*\(at bots\.0\.plugins\.0\.with\.times\)$/);
  });

  it('relay-zulip\'s options are checked at their line and column: a side neither stream/topic nor stream, an email without @', async () => {
    const list = await problems(['      - use: relay-zulip', '        with: { server_url: "https://z.example.org", email: bot, api_key: kkkkkkkkkkkkkkkkkkkkkkkk, streams: { general: "/lobby" } }']);
    expect(list).toHaveLength(2);
    expect(list[0]).toMatch(/:9:61: the bot's email, as Zulip shows it under Personal settings → Bots \(at bots\.0\.plugins\.0\.with\.email\)$/);
    expect(list[1]).toMatch(/:9:\d+: a Zulip stream and topic \(general\/lobby\), or a stream alone .*\(at bots\.0\.plugins\.0\.with\.streams\.general\)$/);
  });

  it('relay-telegram\'s, relay-mattermost\'s and relay-rocketchat\'s options are checked at their line and column, a misspelt key with the nearest (#33)', async () => {
    // Where a value starts on line 9 (the `with:` line), as check reports its column.
    const at = (line: string, value: string) => `:9:${line.indexOf(value) + 1}: `;

    const telegram = '        with: { token: "12345:abc", chats: { general: "@ourgroup" }, pol_timeout_s: 5 }';
    expect(await problems(['      - use: relay-telegram', telegram])).toEqual([
      expect.stringMatching(new RegExp(`${at(telegram, '"12345:abc"')}a Telegram bot token from @BotFather \\(123456789:AA\\.\\.\\.\\) \\(at bots\\.0\\.plugins\\.0\\.with\\.token\\)$`)),
      expect.stringMatching(new RegExp(`${at(telegram, '"@ourgroup"')}a Telegram chat id \\(-1001234567890\\), or a chat id and a forum topic id .*\\(at bots\\.0\\.plugins\\.0\\.with\\.chats\\.general\\)$`)),
      expect.stringMatching(new RegExp(`${at(telegram, 'pol_timeout_s')}unknown key 'pol_timeout_s' \\(did you mean 'poll_timeout_s'\\?\\) \\(at bots\\.0\\.plugins\\.0\\.with\\.pol_timeout_s\\)$`)),
    ]);

    const mattermost = '        with: { server_url: "https://mm.example.org", token: tttttttttttttttttttttttttt, channels: { general: "Town Square" }, post_ass: bot }';
    expect(await problems(['      - use: relay-mattermost', mattermost])).toEqual([
      expect.stringMatching(new RegExp(`${at(mattermost, '"Town Square"')}a Mattermost channel id \\(26 lowercase letters and digits\\) or team/channel .*\\(at bots\\.0\\.plugins\\.0\\.with\\.channels\\.general\\)$`)),
      expect.stringMatching(new RegExp(`${at(mattermost, 'post_ass')}unknown key 'post_ass' \\(did you mean 'post_as'\\?\\) \\(at bots\\.0\\.plugins\\.0\\.with\\.post_ass\\)$`)),
    ]);

    const rocketchat = '        with: { server_url: "https://rc.example.org", token: tttttttttttttttttttttttttt, rooms: { general: "general room" } }';
    expect(await problems(['      - use: relay-rocketchat', rocketchat])).toEqual([
      expect.stringMatching(new RegExp(`${at(rocketchat, '"general room"')}a Rocket\\.Chat room id .* or #name .*\\(at bots\\.0\\.plugins\\.0\\.with\\.rooms\\.general\\)$`)),
      expect.stringMatching(new RegExp(`:9:\\d+: user_id is needed with token .*\\(at bots\\.0\\.plugins\\.0\\.with\\.user_id\\)$`)),
    ]);
    const misspelt = '        with: { server_url: "https://rc.example.org", user_id: aB3dE5gH7jK9mN2pQ, token: tttttttttttttttttttttttttt, romos: {} }';
    expect(await problems(['      - use: relay-rocketchat', misspelt])).toEqual([
      expect.stringMatching(new RegExp(`${at(misspelt, 'romos')}unknown key 'romos' \\(did you mean 'rooms'\\?\\) \\(at bots\\.0\\.plugins\\.0\\.with\\.romos\\)$`)),
    ]);
  });

  it('configPath resolves against the file directory', async () => {
    const loaded = await loadBotsConfig(write(['      - use: logger']), {});
    expect(configPath(loaded, './x/y.json')).toBe(join(dir, 'x', 'y.json'));
    expect(configPath(loaded, '/abs/z')).toBe('/abs/z');
  });

  it('Supervisor.check answers the plugins of every bot', async () => {
    const loaded = await loadBotsConfig(write(['      - use: responder']), {});
    const all = await Supervisor.check(loaded);
    expect(all.map((bot) => bot.map((p) => p.name))).toEqual([['responder']]);
  });
});

describe('groupwire check', () => {
  it('says the repository bots.yaml is valid, with a summary', async () => {
    const output: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      output.push(String(chunk));
      return true;
    });
    const file = join(ROOT, 'bots.yaml');
    expect(await checkCommand([file])).toBe(0);
    const text = output.join('');
    expect(text).toContain(`${file} is valid\n`);
    expect(text).toMatch(/demo-bot: 3 chat\(s\), plugins: logger, responder/);
  });

  it('prints the help with -h and throws a ConfigError for a bad file', async () => {
    const output: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      output.push(String(chunk));
      return true;
    });
    expect(await checkCommand(['-h'])).toBe(0);
    expect(output.join('')).toMatch(/^Usage: groupwire check/);
    const bad = write(['      - use: logger', '        with: { dir: 5 }']);
    await expect(checkCommand([bad])).rejects.toThrow(/:9:22: Invalid input: expected string, received number/);
  });
});
