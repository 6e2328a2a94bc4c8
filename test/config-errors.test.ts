import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { at, botsFiles } from './helpers/bots-files.js';
import { loadBotsConfig, type LoadedConfig } from '../src/config/bots-config.js';
import { ConfigError } from '../src/config/yaml-source.js';
import { Supervisor } from '../src/supervisor/supervisor.js';

const files = botsFiles('gw-config-errors-');
const { dir, write } = files;
afterAll(() => files.remove());

async function problemsOf(promise: Promise<unknown>): Promise<string[]> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}

const HEAD = ['service:', '  base_url: https://gds.example', 'bots:'];
/** A valid bot at list indentation, plus extra lines inside it. */
function bot(name: string, ...extra: string[]): string[] {
  return [
    `  - name: ${name}`,
    '    login: { email: bot@example.com, password: pw }',
    '    chats:',
    '      - { group: demo, chat: general }',
    ...extra,
  ];
}

describe('bots.yaml: a valid file', () => {
  it('loads with defaults filled in and its directory remembered', async () => {
    const file = write([...HEAD, ...bot('a')]);
    const loaded = await loadBotsConfig(file, {});
    expect(loaded.dir).toBe(dir);
    expect(loaded.config.state_dir).toBe('./.groupwire');
    expect(loaded.config.log).toEqual({ level: 'info', pretty: 'auto' });
    expect(loaded.config.bots[0]).toMatchObject({
      name: 'a', plugins: [], history_on_first_start: 0, closed_chat_check_seconds: 30,
      chats: [{ group: 'demo', chat: 'general', create: false, desc: '' }],
    });
  });

  it('accepts base_url: embedded and a token login', async () => {
    const lines = ['service:', '  base_url: embedded', 'bots:', '  - name: t', '    login: { token: abc }', '    chats: [{ group: 7, chat: 9 }]'];
    const loaded = await loadBotsConfig(write(lines), {});
    expect(loaded.config.bots[0]!.login).toEqual({ token: 'abc', scheme: 'basic' });
    expect(loaded.config.bots[0]!.chats[0]).toMatchObject({ group: '7', chat: '9' });
  });
});

describe('bots.yaml: every mistake is located', () => {
  it('a YAML syntax error', async () => {
    const lines = [...HEAD, '  - name: a', '     login: {'];
    const file = write(lines);
    const problems = await problemsOf(loadBotsConfig(file, {}));
    expect(problems.length).toBeGreaterThan(0);
    for (const problem of problems) expect(problem).toMatch(new RegExp(`^${escape(file)}:\\d+:\\d+: \\S`));
  });

  it('an unclosed flow sequence', async () => {
    const file = write(['service:', '  base_url: https://gds.example', 'bots: [1, 2']);
    const [problem] = await problemsOf(loadBotsConfig(file, {}));
    expect(problem).toMatch(new RegExp(`^${escape(file)}:\\d+:\\d+: .*\\]`));
  });

  it('a key given twice', async () => {
    const lines = [...HEAD, ...bot('a'), 'bots: []'];
    const file = write(lines);
    const [problem] = await problemsOf(loadBotsConfig(file, {}));
    expect(problem).toMatch(new RegExp(`^${escape(file)}:8:1: .*unique`));
  });

  it('a file that cannot be read', async () => {
    const file = join(dir, 'missing.yaml');
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([`${file}: cannot read it (ENOENT)`]);
  });

  it('an unknown key points at the key itself', async () => {
    const lines = [...HEAD, ...bot('a', '    chanels: []')];
    const file = write(lines);
    const problems = await problemsOf(loadBotsConfig(file, {}));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^${escape(at(file, lines, 8, 'chanels'))}: unknown key 'chanels' \\(did you mean 'chats'\\?\\) \\(at bots\\.0\\.chanels\\)$`));
  });

  it('an unknown key at the top level', async () => {
    const lines = [...HEAD, ...bot('a'), 'extra: 1'];
    const file = write(lines);
    expect((await problemsOf(loadBotsConfig(file, {})))[0]).toMatch(new RegExp(`^${escape(file)}:8:1: unknown key 'extra' \\(expected one of 'service', 'state_dir', 'log', 'bots', 'gateways', 'message_map', 'ops', 'media', 'coordination'\\)`));
  });

  it('a wrong type points at the value', async () => {
    const lines = [...HEAD, ...bot('a', '    history_on_first_start: lots')];
    const file = write(lines);
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([
      `${at(file, lines, 8, 'lots')}: Invalid input: expected number, received string (at bots.0.history_on_first_start)`,
    ]);
  });

  it('a value out of its enum', async () => {
    const lines = [...HEAD, ...bot('a'), 'log:', '  level: chatty'];
    const file = write(lines);
    const [problem] = await problemsOf(loadBotsConfig(file, {}));
    expect(problem).toMatch(new RegExp(`^${escape(at(file, lines, 9, 'chatty'))}: .*expected one of.*\\(at log\\.level\\)`));
  });

  it('service.upgrade_rate: mistakes are located at the value or the key', async () => {
    const lines = ['service:', '  base_url: https://gds.example', '  upgrade_rate: { per_second: 0, brust: 5 }', 'bots:', ...bot('a')];
    const file = write(lines);
    const problems = await problemsOf(loadBotsConfig(file, {}));
    expect(problems).toHaveLength(2);
    expect(problems).toContainEqual(expect.stringMatching(
      new RegExp(`^${escape(at(file, lines, 3, '0,'))}: .*expected number to be >0 \\(at service\\.upgrade_rate\\.per_second\\)`)));
    expect(problems).toContainEqual(expect.stringMatching(
      new RegExp(`^${escape(at(file, lines, 3, 'brust'))}: unknown key 'brust' \\(did you mean 'burst'\\?\\) \\(at service\\.upgrade_rate\\.brust\\)`)));

    const fraction = ['service:', '  base_url: https://gds.example', '  upgrade_rate:', '    per_second: 5', '    burst: 2.5', 'bots:', ...bot('a')];
    const fractionFile = write(fraction);
    expect(await problemsOf(loadBotsConfig(fractionFile, {}))).toEqual([
      expect.stringMatching(new RegExp(`^${escape(at(fractionFile, fraction, 5, '2.5'))}: .*expected int.*\\(at service\\.upgrade_rate\\.burst\\)`)),
    ]);
  });

  it('service.upgrade_rate defaults to the local service\'s limit; a burst left out is two seconds\' worth', async () => {
    expect((await loadBotsConfig(write([...HEAD, ...bot('a')]), {})).config.service.upgrade_rate).toEqual({ per_second: 20, burst: 50 });
    const lines = ['service:', '  base_url: https://gds.example', '  upgrade_rate: { per_second: 7.5 }', 'bots:', ...bot('a')];
    expect((await loadBotsConfig(write(lines), {})).config.service.upgrade_rate).toEqual({ per_second: 7.5, burst: 15 });
  });

  it('a missing required key points at the map that lacks it', async () => {
    const lines = [...HEAD, '  - name: a', '    login: { email: bot@example.com, password: pw }'];
    const file = write(lines);
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([
      `${at(file, lines, 4, 'name')}: missing key 'chats' (a list) (at bots.0.chats)`,
    ]);
  });

  it('a missing top-level section points at the document', async () => {
    const lines = ['bots:', ...bot('a')];
    const file = write(lines);
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([
      `${file}:1:1: missing key 'service' (a map of keys) (at service)`,
    ]);
  });

  it('a login that is neither form', async () => {
    const lines = [...HEAD, '  - name: a', '    login: { user: me }', '    chats: [{ group: g, chat: c }]'];
    const file = write(lines);
    const problems = await problemsOf(loadBotsConfig(file, {}));
    expect(problems[0]).toBe(`${at(file, lines, 5, '{ user')}: expected { email, password } or { token } (at bots.0.login)`);
  });

  it('two bots with the same name: the second name is located', async () => {
    const lines = [...HEAD, ...bot('twin'), ...bot('twin')];
    const file = write(lines);
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([
      `${at(file, lines, 8, 'twin')}: a second bot named twin; names must differ (at bots.1.name)`,
    ]);
  });

  it('a bot name with a space', async () => {
    const lines = [...HEAD, ...bot('my bot')];
    const file = write(lines);
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([
      `${at(file, lines, 4, 'my bot')}: a bot name (letters, digits, _ . -) (at bots.0.name)`,
    ]);
  });

  it('an http:// base_url is refused, https:// taken', async () => {
    const lines = ['service:', '  base_url: http://gds.example', 'bots:', ...bot('a')];
    const file = write(lines);
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([
      `${at(file, lines, 2, 'http:')}: expected embedded or an https:// address (at service.base_url)`,
    ]);
  });

  it('reports every problem of a file at once', async () => {
    const lines = ['service:', '  base_url: ftp://x', 'bots:', '  - name: a', '    login: { token: t }', '    chats: []', '    extra: 1'];
    const problems = await problemsOf(loadBotsConfig(write(lines), {}));
    expect(problems.length).toBe(3);
  });
});

describe('bots.yaml: ${ENV} interpolation', () => {
  const lines = [...HEAD, '  - name: a', '    login: { email: bot@example.com, password: "${BOT_PASSWORD}" }', '    chats: [{ group: g, chat: c }]'];

  it('a variable that is not set is located at its scalar', async () => {
    const file = write(lines);
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([
      `${at(file, lines, 5, '"${BOT')}: environment variable BOT_PASSWORD is not set (write \${BOT_PASSWORD:-default} for a default)`,
    ]);
  });

  it('an empty variable counts as not set', async () => {
    expect(await problemsOf(loadBotsConfig(write(lines), { BOT_PASSWORD: '' }))).toHaveLength(1);
  });

  it('a set variable is replaced', async () => {
    const loaded = await loadBotsConfig(write(lines), { BOT_PASSWORD: 's3cret' });
    expect(loaded.config.bots[0]!.login).toMatchObject({ password: 's3cret' });
  });

  it('${NAME:-default} gives the default, or the variable when set', async () => {
    const withDefault = lines.map((line) => line.replace('${BOT_PASSWORD}', () => 'x-${BOT_PASSWORD:-fallback}-y'));
    expect((await loadBotsConfig(write(withDefault), {})).config.bots[0]!.login).toMatchObject({ password: 'x-fallback-y' });
    expect((await loadBotsConfig(write(withDefault), { BOT_PASSWORD: 'set' })).config.bots[0]!.login).toMatchObject({ password: 'x-set-y' });
  });

  it('$${ is a literal ${ and needs no variable', async () => {
    const literal = lines.map((line) => line.replace('${BOT_PASSWORD}', () => 'pa$${BOT_PASSWORD}ss'));
    const loaded = await loadBotsConfig(write(literal), {});
    expect(loaded.config.bots[0]!.login).toMatchObject({ password: 'pa${BOT_PASSWORD}ss' });
  });

  it('several missing variables are all reported', async () => {
    const two = [...HEAD, '  - name: a', '    login: { token: "${A_TOKEN}" }', '    chats: [{ group: "${GROUP}", chat: c }]'];
    const file = write(two);
    expect(await problemsOf(loadBotsConfig(file, {}))).toEqual([
      `${at(file, two, 5, '"${A')}: environment variable A_TOKEN is not set (write \${A_TOKEN:-default} for a default)`,
      `${at(file, two, 6, '"${G')}: environment variable GROUP is not set (write \${GROUP:-default} for a default)`,
    ]);
  });
});

describe('bots.yaml: plugins checked by Supervisor.check', () => {
  async function check(lines: string[]): Promise<{ file: string; loaded: LoadedConfig; problems: string[] }> {
    const file = write(lines);
    const loaded = await loadBotsConfig(file, {});
    return { file, loaded, problems: await problemsOf(Supervisor.check(loaded)) };
  }

  it('a use: that names a missing file is located at use', async () => {
    const lines = [...HEAD, ...bot('a', '    plugins:', '      - use: ./no-such-plugin.js')];
    const { file, problems } = await check(lines);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^${escape(at(file, lines, 9, './no-such'))}: cannot load plugin ./no-such-plugin.js: .*no-such-plugin\\.js`));
  });

  it('a module that is not a plugin', async () => {
    const use = join(process.cwd(), 'test/fixtures/plugins/not-a-plugin.js');
    const lines = [...HEAD, ...bot('a', '    plugins:', '      - use: logger', `      - use: ${use}`)];
    const { file, problems } = await check(lines);
    expect(problems).toEqual([`${at(file, lines, 10, use)}: ${use} does not export a plugin (export default definePlugin({...}))`]);
  });

  it('a module that throws while loading', async () => {
    const use = join(process.cwd(), 'test/fixtures/plugins/throws-on-import.js');
    const lines = [...HEAD, ...bot('a', '    plugins:', `      - use: ${use}`)];
    const { file, problems } = await check(lines);
    expect(problems).toEqual([`${at(file, lines, 9, use)}: cannot load plugin ${use}: fixture exploded at import`]);
  });

  it('logger with dir: 5 is refused inside with', async () => {
    const lines = [...HEAD, ...bot('a', '    plugins:', '      - use: logger', '        with: { dir: 5 }')];
    const { file, problems } = await check(lines);
    expect(problems).toEqual([
      `${at(file, lines, 10, '5')}: Invalid input: expected string, received number (at bots.0.plugins.0.with.dir)`,
    ]);
  });

  it('responder with an unknown key points at that key', async () => {
    const lines = [...HEAD, ...bot('a', '    plugins:', '      - use: responder', '        with:', '          prefx: "?"')];
    const { file, problems } = await check(lines);
    expect(problems).toEqual([`${at(file, lines, 11, 'prefx')}: unknown key 'prefx' (did you mean 'prefix'?) (at bots.0.plugins.0.with.prefx)`]);
  });

  it('responder reads_group: a platform in capitals and a gateway entry with a mistake, each at its place', async () => {
    const lines = [...HEAD, ...bot('a', '    plugins:', '      - use: responder', '        with:', '          reads_group:', '            - IRC', '            - { gateway: lobby, platfrom: slack }')];
    const { file, problems } = await check(lines);
    expect(problems).toEqual([
      `${at(file, lines, 12, 'IRC')}: a platform as relays name it, in lower case: irc, slack, discord, matrix, xmpp, http, or chat (chats of other groups) (at bots.0.plugins.0.with.reads_group.0)`,
      `${at(file, lines, 13, 'platfrom')}: unknown key 'platfrom' (did you mean 'platform'?) (at bots.0.plugins.0.with.reads_group.1.platfrom)`,
    ]);
  });

  it('problems of several bots and plugins come together', async () => {
    const lines = [
      ...HEAD,
      ...bot('a', '    plugins:', '      - use: logger', '        with: { format: csv }'),
      ...bot('b', '    plugins:', '      - use: ./missing.js', '      - use: responder', '        with: { prefix: "" }'),
    ];
    const { problems } = await check(lines);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/with\.format\)$/);
    expect(problems[1]).toMatch(/cannot load plugin \.\/missing\.js/);
    expect(problems[2]).toMatch(/\(at bots\.1\.plugins\.1\.with\.prefix\)$/);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('environment variables keep YAML types', () => {
  it('a number or boolean made by ${VAR} alone is a number or boolean', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-config-types-'));
    const file = join(dir, 'bots.yaml');
    writeFileSync(file, [
      'service:', '  base_url: embedded', '  embedded:', '    port: ${PORT:-8443}', 'log:', '  pretty: ${PRETTY:-false}',
      'bots:', '  - name: b', '    login: { email: b@example.com, password: "${PW:-x}" }', '    chats: [{ group: demo, chat: general }]',
      '    history_on_first_start: ${HISTORY}', '',
    ].join('\n'));
    const loaded = await loadBotsConfig(file, { HISTORY: '25' });
    expect(loaded.config.service.embedded?.port).toBe(8443);
    expect(loaded.config.log.pretty).toBe(false);
    expect(loaded.config.bots[0]!.history_on_first_start).toBe(25);
    expect(loaded.config.bots[0]!.login).toMatchObject({ password: 'x' });
    rmSync(dir, { recursive: true, force: true });
  });
});
