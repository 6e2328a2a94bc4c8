import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_DENY_TYPES } from '../src/config/media-config.js';
import { loadBotsConfig } from '../src/config/bots-config.js';
import { ConfigError } from '../src/config/yaml-source.js';
import { at, botsFiles } from './helpers/bots-files.js';
import { cleanEnv, runCli } from './helpers/cli.js';

/** bots.yaml's `media:` (docs/bots.md): defaults, each mistake at its place, and what `groupwire check` says of it. */

const files = botsFiles('gw-media-config-');
afterAll(() => files.remove());

const HEAD = ['service:', '  base_url: https://gds.example', 'bots:', '  - name: a', '    login: { email: bot@example.com, password: pw }', '    chats:', '      - { group: demo, chat: general }'];

async function problemsOf(file: string): Promise<string[]> {
  const error = await loadBotsConfig(file, {}).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
}

describe('bots.yaml media:', () => {
  it('defaults: 25 MB, 30 days, executables refused, 30 s stall, no listener', async () => {
    const loaded = await loadBotsConfig(files.write(HEAD), {});
    expect(loaded.config.media).toEqual({ max_size: 25_000_000, retention_days: 30, deny_types: [...DEFAULT_DENY_TYPES], stall_timeout: 30 });
    expect(DEFAULT_DENY_TYPES).toEqual(expect.arrayContaining(['.exe', '.msi', '.bat', '.cmd', '.com', '.scr', '.ps1', '.sh', '.jar', '.apk', '.dmg', '.app',
      'application/x-msdownload', 'application/x-dosexec', 'application/x-executable', 'application/x-sh', 'application/java-archive', 'application/vnd.android.package-archive']));
  });

  it('a size written as "25MB", a deny entry that is neither an ending nor a type, a bad listen and public_url: each at its place', async () => {
    const lines = [...HEAD, 'media:', '  max_size: 25MB', '  deny_types: [".exe", "exe"]', '  listen: nowhere', '  public_url: ftp://files.example', '  colour: blue'];
    const file = files.write(lines);
    expect(await problemsOf(file)).toEqual([
      `${at(file, lines, 9, '25MB')}: max_size is a number of bytes (25 MB is 25000000), not "25MB" (at media.max_size)`,
      `${at(file, lines, 10, '"exe"')}: a name ending like .exe, or a content type like application/x-msdownload (at media.deny_types.1)`,
      `${at(file, lines, 11, 'nowhere')}: expected host:port, like 127.0.0.1:9464 (at media.listen)`,
      `${at(file, lines, 12, 'ftp:')}: expected an http:// or https:// address (at media.public_url)`,
      `${at(file, lines, 13, 'colour')}: unknown key 'colour' (expected one of 'dir', 'listen', 'public_url', 'max_size', 'retention_days', 'deny_types', 'stall_timeout') (at media.colour)`,
    ]);
  });

  it('groupwire check says where files are kept, their limits and where links go; a listener on every address without public_url is named', async () => {
    const file = files.write([...HEAD, 'media:', '  dir: ./shared-media', '  listen: 0.0.0.0:8088', '  max_size: 40000000', '  deny_types: [.exe, application/x-sh]']);
    const checked = await runCli(['check', file], cleanEnv());
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(`  files: kept in ${files.dir}/shared-media for 30 day(s), up to 40 MB each; refused: 2 type(s) (deny_types), downloads silent for 30 s\n`);
    expect(checked.stdout).toContain('    served on http://0.0.0.0:8088; links at http://0.0.0.0:8088/<id>/<name> (set public_url for a proxy or CDN in front)\n');
    expect(checked.stdout).toContain('    media.listen 0.0.0.0:8088 listens on every address: set public_url to the address people open (links would say 0.0.0.0)\n');
    const plain = await runCli(['check', files.write(HEAD)], cleanEnv());
    expect(plain.stdout).toContain('    no listener; no links (set media.listen, or public_url): the chat and IRC see file names only\n');
  });
});
