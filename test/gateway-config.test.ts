import { afterAll, describe, expect, it } from 'vitest';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { ConfigError } from '../src/config/yaml-source.js';
import { planGateways } from '../src/gateway/gateway-plan.js';
import { Supervisor } from '../src/supervisor/supervisor.js';
import { botsFiles } from './helpers/bots-files.js';
import { runCli } from './helpers/cli.js';

/** bots.yaml's gateways: what they resolve to, and every mistake refused at `check` with its place. */

const files = botsFiles('gw-gateway-config-');
afterAll(() => files.remove());

const IRC = (channels: string) => [
  '      - use: relay-irc',
  `        with: { server: irc.example, nick: gw, channels: ${channels} }`,
];
const SLACK = (channels: string) => [
  '      - use: relay-slack',
  `        with: { token: xoxb-1, app_token: xapp-1, channels: ${channels} }`,
];

function file(plugins: string[], gateways: string[] = [], chats = ['      - { group: demo, chat: general }', '      - { group: demo, chat: random }']): string {
  return files.write([
    'service:', '  base_url: https://gds.example', 'bots:',
    '  - name: a', '    login: { email: bot@example.com, password: pw }', '    chats:', ...chats,
    '    plugins:', ...plugins,
    ...(gateways.length > 0 ? ['gateways:', ...gateways] : []),
  ]);
}

async function problems(path: string): Promise<string[]> {
  const error = await loadBotsConfig(path, {}).then((loaded) => Supervisor.check(loaded)).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}

async function plan(path: string) {
  const loaded = await loadBotsConfig(path, {});
  return planGateways(loaded, await Supervisor.check(loaded));
}

describe('gateways in bots.yaml', () => {
  it('relays of one bot mapping one chat are one gateway (IRC ⇄ chat ⇄ Slack), with no further config', async () => {
    const { gateways, problems: found } = await plan(file([...IRC('{ general: "#General" }'), ...SLACK('{ general: C0123456789, random: C0987654321 }')]));
    expect(found).toEqual([]);
    expect(gateways.map((g) => [g.name, g.endpoints.map((e) => (e.kind === 'chat' ? `chat ${e.chat}` : `${e.platform} ${e.channelKey}`))])).toEqual([
      ['general', ['chat general', 'irc #general', 'slack C0123456789']],
      ['random', ['chat random', 'slack C0987654321']],
    ]);
  });

  it('a named gateway with directions; a relay whose channels only gateways name joins them', async () => {
    const { gateways, problems: found } = await plan(file([...IRC('{}'), ...SLACK('{}')], [
      '  - name: announcements',
      '    endpoints:',
      '      - { chat: general, direction: in }',
      '      - { irc: "#announce", direction: out }',
      '      - { slack: C0ANNOUNCE1, direction: out }',
    ]));
    expect(found).toEqual([]);
    expect(gateways).toHaveLength(1);
    expect(gateways[0]!.endpoints.map((e) => e.direction)).toEqual(['in', 'out', 'out']);
  });

  it('names what is wrong, each at its place', async () => {
    const path = file([...IRC('{ general: "#general" }'), ...SLACK('{}')], [
      '  - name: wrong',
      '    endpoints:',
      '      - { chat: nowhere }',
      '      - { matrix: "!room:example.org" }',
      '      - { bot: zed, chat: general }',
    ]);
    const found = await problems(path);
    expect(found).toEqual(expect.arrayContaining([
      expect.stringMatching(/:17:\d+: bot a has no chat nowhere in its chats/),
      expect.stringMatching(/:18:\d+: bot a has no relay for matrix in its plugins \(its relays: irc, slack\)/),
      expect.stringMatching(/:19:\d+: no bot named zed/),
      expect.stringMatching(/:12:\d+: relay-slack relays nothing: map a chat to a channel in its channels:, or name its channels in a gateway/),
    ]));
    expect(found).toHaveLength(4);
  });

  it('an endpoint naming two sides is refused by the schema, at its place', async () => {
    const found = await problems(file(IRC('{ general: "#general" }'), [
      '  - name: two', '    endpoints:', '      - { chat: general, irc: "#general" }', '      - { chat: random }',
    ]));
    expect(found).toEqual([expect.stringMatching(/:15:\d+: an endpoint names one side: .*this one names chat, irc/)]);
  });

  it('refuses a gateway with through_chat where lines from one relay could not reach another (no chat to travel through); without it the intake hands them on', async () => {
    const gateway = (throughChat: boolean) => [
      '  - name: nochat',
      ...(throughChat ? ['    through_chat: true'] : []),
      '    endpoints:',
      '      - { irc: "#a" }',
      '      - { slack: C0123456789 }',
      '      - { chat: general, direction: in }',
    ];
    const found = await problems(file([...IRC('{}'), ...SLACK('{}')], gateway(true)));
    expect(found.some((p) => /gateway nochat: lines for slack C0123456789 \(bot a\) travel through a chat of bot a that takes out \(through_chat: true\)/.test(p))).toBe(true);
    expect(found.some((p) => /lines for irc #a/.test(p))).toBe(true);
    expect((await plan(file([...IRC('{}'), ...SLACK('{}')], gateway(false)))).problems).toEqual([]);
  });

  it('groupwire check shows each gateway as resolved, from another folder', { timeout: 30_000 }, async () => {
    const path = file([...IRC('{ general: "#general" }'), ...SLACK('{}')], [
      '  - name: announcements', '    endpoints:', '      - { chat: random, direction: in }', '      - { slack: C0ANNOUNCE1, direction: out }',
      '  - name: moderated', '    through_chat: true', '    endpoints:', '      - { chat: general }', '      - { irc: "#mod" }', '      - { slack: C0MODERATE1 }',
    ]);
    const result = await runCli(['check', path], { ...process.env }, files.dir);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('  gateway announcements: chat random (a), in ⇄ slack C0ANNOUNCE1 (a/relay-slack), out\n  gateway moderated:');
    expect(result.stdout).toContain('  gateway moderated: chat general (a) ⇄ irc #mod (a/relay-irc) ⇄ slack C0MODERATE1 (a/relay-slack)\n    through_chat: lines between its relays go through the chat first');
    expect(result.stdout).toContain('  gateway general (from the relays\' channels:): chat general (a) ⇄ irc #general (a/relay-irc)');
  });
});
