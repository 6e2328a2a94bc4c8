import { afterAll, describe, expect, it } from 'vitest';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { ConfigError } from '../src/config/yaml-source.js';
import { botsFiles } from './helpers/bots-files.js';

/** bots.yaml's `ops:`: on by default on loopback, off with false, a token required anywhere else. */

const files = botsFiles('gw-ops-config-');
afterAll(() => files.remove());

const BASE = ['service:', '  base_url: https://gds.example', 'bots:', '  - name: a', '    login: { email: bot@example.com, password: pw }',
  '    chats:', '      - { group: demo, chat: general }'];

async function problemsOf(lines: string[]): Promise<string[]> {
  const error = await loadBotsConfig(files.write(lines), {}).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}

describe('bots.yaml: ops', () => {
  it('defaults to 127.0.0.1:9464 with the lag probe every 15 s; false turns it off', async () => {
    expect((await loadBotsConfig(files.write(BASE), {})).config.ops).toEqual({ listen: '127.0.0.1:9464', lag_probe_seconds: 15 });
    expect((await loadBotsConfig(files.write([...BASE, 'ops: false']), {})).config.ops).toBe(false);
    expect((await loadBotsConfig(files.write([...BASE, 'ops: { listen: "[::1]:0" }']), {})).config.ops).toMatchObject({ listen: '[::1]:0' });
  });

  it('a listen off loopback needs a token: refused with file:line:col', async () => {
    const problems = await problemsOf([...BASE, 'ops:', '  listen: 0.0.0.0:9464']);
    expect(problems).toEqual([expect.stringMatching(/\.yaml:9:11: ops\.listen 0\.0\.0\.0:9464 is reachable from other machines: give ops\.token/)]);
    const withToken = await loadBotsConfig(files.write([...BASE, 'ops:', '  listen: 0.0.0.0:9464', '  token: "${OPS_TOKEN}"']), { OPS_TOKEN: 'x'.repeat(20) });
    expect(withToken.config.ops).toMatchObject({ listen: '0.0.0.0:9464', token: 'x'.repeat(20) });
  });

  it('says what a listen address and a token look like', async () => {
    expect(await problemsOf([...BASE, 'ops: { listen: 9464 }'])).toEqual([expect.stringMatching(/:8:\d+: .*host:port/)]);
    expect(await problemsOf([...BASE, 'ops: { listen: "127.0.0.1:70000" }'])).toEqual([expect.stringMatching(/:8:\d+: .*0 to 65535/)]);
    expect(await problemsOf([...BASE, 'ops: { token: short }'])).toEqual([expect.stringMatching(/:8:\d+: .*at least 16 characters/)]);
    expect(await problemsOf([...BASE, 'ops: true'])).toEqual([expect.stringMatching(/:8:\d+: .*expected false, or \{ listen/)]);
  });
});
