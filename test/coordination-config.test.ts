import { afterAll, describe, expect, it } from 'vitest';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { ConfigError } from '../src/config/yaml-source.js';
import { narrowConfig, planUnits, shardOf } from '../src/coordination/units.js';
import { planGateways } from '../src/gateway/gateway-plan.js';
import { Supervisor } from '../src/supervisor/supervisor.js';
import { botsFiles } from './helpers/bots-files.js';

/** bots.yaml's `coordination:` and `shards:`, and the units workers place (docs/scale-out.md). */
const files = botsFiles('gw-coordination-config-');
afterAll(() => files.remove());

const HEAD = ['service:', '  base_url: https://gds.example', 'coordination:', '  redis: redis://:secret@127.0.0.1:6379', 'bots:'];
function bot(name: string, chats: string[], ...extra: string[]): string[] {
  return [`  - name: ${name}`, '    login: { email: bot@example.com, password: pw }', '    chats:', ...chats.map((chat) => `      - { group: demo, chat: ${chat} }`), ...extra];
}
const IRC = (nick: string, channels: string) => [
  '    plugins:', '      - use: relay-irc', `        with: { server: irc.example, nick: ${nick}, channels: ${channels} }`,
];

async function units(lines: string[]) {
  const loaded = await loadBotsConfig(files.write(lines), {});
  const plugins = await Supervisor.check(loaded);
  return { loaded, ...planUnits(loaded, plugins, planGateways(loaded, plugins).gateways) };
}

describe('coordination: in bots.yaml', () => {
  it('has defaults: prefix groupwire, leases of 10 s', async () => {
    const loaded = await loadBotsConfig(files.write([...HEAD, ...bot('a', ['general'])]), {});
    expect(loaded.config.coordination).toEqual({ redis: 'redis://:secret@127.0.0.1:6379', prefix: 'groupwire', lease_seconds: 10 });
    expect(loaded.config.bots[0]!.shards).toBe(1);
  });

  it('refuses an embedded service and a URL that is not redis://, each with its place', async () => {
    const file = files.write(['service:', '  base_url: embedded', 'coordination:', '  redis: http://x', 'bots:', ...bot('a', ['general'])]);
    const error = await loadBotsConfig(file, {}).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    expect(problems).toContain(`${file}:4:10: `);
    expect(problems).toMatch(/redis:\/\/ or rediss:\/\//);
    expect(problems).toMatch(/coordination needs service\.base_url https/);
  });
});

describe('units', () => {
  it('a bot alone is a unit; bots a gateway joins are one unit', async () => {
    const { units: planned } = await units([...HEAD, ...bot('a', ['one']), ...bot('b', ['two']), ...bot('c', ['three']),
      'gateways:', '  - name: ab', '    endpoints:', '      - { bot: a, chat: one }', '      - { bot: b, chat: two }']);
    expect(planned.map((unit) => unit.id)).toEqual(['bot:c', 'bots:a+b']);
  });

  it('a relay bot moves whole (its channels make a gateway of it alone)', async () => {
    const { units: planned } = await units([...HEAD, ...bot('r', ['one', 'two'], ...IRC('gw', '{ one: "#one" }'))]);
    expect(planned.map((unit) => unit.id)).toEqual(['bot:r']);
  });

  it('shards: N splits a shardable bot\'s chats by a stable hash; every chat in exactly one shard', async () => {
    const chats = Array.from({ length: 40 }, (_, index) => `c${index}`);
    const { loaded, units: planned } = await units([...HEAD, ...bot('big', chats, '    shards: 4', '    plugins: [{ use: logger, with: { dir: ./t } }, { use: responder }]')]);
    expect(planned.map((unit) => unit.id)).toEqual(['bot:big#0', 'bot:big#1', 'bot:big#2', 'bot:big#3']);
    const narrowed = planned.map((unit) => narrowConfig(loaded, unit).config.bots[0]!.chats.map((chat) => chat.chat));
    expect(narrowed.flat().sort()).toEqual([...chats].sort());
    expect(narrowed.every((list) => list.length > 0)).toBe(true);
    // Stable: the same entry lands in the same shard every time.
    expect(shardOf({ group: 'demo', chat: 'c7', create: false, desc: '' }, 4)).toBe(shardOf({ group: 'demo', chat: 'c7', create: false, desc: '' }, 4));
  });

  it('refuses shards where they cannot be, with file:line:col', async () => {
    const lines = [...HEAD, ...bot('r', ['one', 'two'], '    shards: 2', ...IRC('gw', '{ one: "#one" }')), ...bot('s', ['x'], '    shards: 3')];
    const { problems } = await units(lines);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/:\d+:13: a bot in a gateway cannot be sharded/);
    expect(problems[1]).toMatch(/shards: 3 is more than the bot's 1 chat/);
  });
});
