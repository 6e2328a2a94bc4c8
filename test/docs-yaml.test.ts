import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { parse, parseDocument, stringify } from 'yaml';
import { collect } from './helpers/built-cli.js';
import type { JobResult } from './helpers/check-each.js';
import { cleanEnv, ROOT, runCli } from './helpers/cli.js';
import { examplesOf, variablesOf, type YamlExample } from './helpers/markdown-yaml.js';

/**
 * Every YAML example of README.md and docs/ parses, and every bots.yaml among them (whole, or a part
 * put into a minimal bots.yaml) passes `groupwire check`, with the environment variables it names set
 * to values of the right form: no example can rot. The markers are described in
 * test/helpers/markdown-yaml.ts and README.md "Development".
 */

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const scratch = mkdtempSync(join(tmpdir(), 'gw-docs-yaml-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The pages: README.md and every markdown file under docs/. */
function pages(): string[] {
  const found = ['README.md'];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith('.md')) found.push(join(dir, entry.name));
    }
  };
  walk('docs');
  return found;
}

/** A value of the right form for a variable an example names (a token's prefix, a URL's scheme). */
function dummyValue(name: string): string {
  const forms: Record<string, string> = {
    REDIS_URL: 'redis://127.0.0.1:6379',
    SLACK_BOT_TOKEN: 'xoxb-0000-docs-example',
    SLACK_APP_TOKEN: 'xapp-0000-docs-example',
    TELEGRAM_TOKEN: '123456789:AAdocs-example-token-0000000000000',
    ZULIP_API_KEY: 'docsexample0000000000000000000000',
    ROCKETCHAT_USER_ID: 'aB3dE5gH7jK9mN2pQ',
  };
  // At least 16 characters: enough for every token and secret (ops.token's minimum).
  return forms[name] ?? `docs-example-${name.toLowerCase()}`;
}

/** The bots.yaml a part of one is put into: a service and a bot in one chat. */
function wholeFileOf(part: string, where: string): string {
  const keys = parse(part) as Record<string, unknown> | null;
  if (!keys || typeof keys !== 'object' || Array.isArray(keys)) throw new Error(`${where}: a bots.yaml part must be keys of bots.yaml`);
  const file: Record<string, unknown> = {
    service: { base_url: 'https://groups.example.com' },
    bots: [{ name: 'docs-example', login: { email: 'bot@example.com', password: 'docs-example' }, chats: [{ group: 'demo', chat: 'general' }] }],
  };
  for (const [key, value] of Object.entries(keys)) {
    // `bots: …` in an excerpt: as in the minimal file.
    if (value === '…') continue;
    if (key === 'plugins') (file.bots as Array<Record<string, unknown>>)[0]!.plugins = value;
    else file[key] = value;
  }
  return stringify(file);
}

/** A relay for each platform a gateways part names, with the least its options need and no channels of its own. */
const RELAYS: Record<string, (endpoints: Array<Record<string, unknown>>) => Record<string, unknown>> = {
  irc: () => ({ use: 'relay-irc', with: { server: 'irc.example.net', nick: 'gwbot' } }),
  slack: () => ({ use: 'relay-slack', with: { token: dummyValue('SLACK_BOT_TOKEN'), app_token: dummyValue('SLACK_APP_TOKEN') } }),
  discord: () => ({ use: 'relay-discord', with: { token: 'docs-example-discord-token-0000' } }),
  // A mail endpoint that takes lines (not `in` only) needs post_to_group, as the page says.
  mail: (endpoints) => ({ use: 'group-mail', with: { post_to_group: endpoints.some((e) => e.mail !== undefined && e.direction !== 'in') } }),
};

/** The bots.yaml a gateways part is put into: one bot with the chats and relays its endpoints name. */
function gatewaysFileOf(part: string, where: string): string {
  const keys = parse(part) as { gateways?: Array<{ endpoints?: Array<Record<string, unknown>> }> } | null;
  if (!keys || !Array.isArray(keys.gateways)) throw new Error(`${where}: a gateways part must have a gateways: list`);
  const endpoints = keys.gateways.flatMap((gateway) => gateway.endpoints ?? []);
  const chats = [...new Set(endpoints.flatMap((endpoint) => typeof endpoint.chat === 'string' ? [endpoint.chat] : []))];
  const platforms = [...new Set(endpoints.flatMap((endpoint) => Object.keys(endpoint).filter((key) => !['chat', 'bot', 'plugin', 'direction'].includes(key))))];
  const unknown = platforms.filter((platform) => !RELAYS[platform]);
  if (unknown.length > 0) throw new Error(`${where}: no relay to put in for ${unknown.join(', ')} (add one to RELAYS)`);
  return stringify({
    service: { base_url: 'https://groups.example.com' },
    bots: [{
      name: 'docs-example', login: { email: 'bot@example.com', password: 'docs-example' },
      chats: (chats.length > 0 ? chats : ['general']).map((chat) => ({ group: 'demo', chat })),
      plugins: platforms.map((platform) => RELAYS[platform]!(endpoints)),
    }],
    gateways: keys.gateways,
  });
}

interface Prepared {
  example: YamlExample;
  file: string;
  env: Record<string, string>;
}

/** Writes each example to check into a folder of its page (with the page's plugin files and a ca.pem). */
function prepare(): { parsed: YamlExample[]; toCheck: Prepared[]; byPage: Map<string, YamlExample[]> } {
  const parsed: YamlExample[] = [];
  const toCheck: Prepared[] = [];
  const byPage = new Map<string, YamlExample[]>();
  for (const page of pages()) {
    const { yaml, files } = examplesOf(join(ROOT, page), page);
    byPage.set(page, yaml);
    const dir = join(scratch, page.replaceAll('/', '_'));
    mkdirSync(dir, { recursive: true });
    // The reference bots.yaml trusts a ca_file beside it; check only looks that it is a file.
    writeFileSync(join(dir, 'ca.pem'), '');
    for (const [path, content] of files) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    yaml.forEach((example, index) => {
      parsed.push(example);
      if (example.kind === 'parse only') return;
      const file = join(dir, `example-${index + 1}.yaml`);
      const text = example.kind === 'bots.yaml part' ? wholeFileOf(example.text, example.where)
        : example.kind === 'gateways part' ? gatewaysFileOf(example.text, example.where) : example.text;
      writeFileSync(file, text);
      const env = Object.fromEntries(variablesOf(example.text).map((name) => [name, dummyValue(name)]));
      toCheck.push({ example, file, env });
    });
  }
  return { parsed, toCheck, byPage };
}

describe('the YAML examples of README.md and docs/', () => {
  test('every one parses; every bots.yaml passes groupwire check; every plugin page has a whole one', async () => {
    const { parsed, toCheck, byPage } = prepare();
    const unparsable = parsed.flatMap((example) => parseDocument(example.text).errors.slice(0, 1).map((error) => `${example.where}: ${error.message.split('\n')[0]}`));
    expect(unparsable).toEqual([]);

    // check's own command on each, in one process run as the CLI runs (see helpers/check-each.ts).
    const jobs = join(scratch, 'jobs.json');
    const results = join(scratch, 'results.json');
    writeFileSync(jobs, JSON.stringify(toCheck.map(({ example, file, env }) => ({ file, env, kind: example.kind === 'seed' ? 'seed' : 'check' }))));
    const run = await collect(spawn(process.execPath, ['--import', TSX, join(ROOT, 'test/helpers/check-each.ts'), jobs, results], {
      cwd: scratch, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'],
    }));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const outcomes = JSON.parse(readFileSync(results, 'utf8')) as JobResult[];
    expect(outcomes).toHaveLength(toCheck.length);
    const refused = outcomes.flatMap((outcome, index) => outcome.ok ? [] : [`${toCheck[index]!.example.where} (${toCheck[index]!.example.kind}): ${outcome.said}`]);
    expect(refused).toEqual([]);
    for (const [index, outcome] of outcomes.entries()) {
      if (toCheck[index]!.example.kind !== 'seed') expect(outcome.said, toCheck[index]!.example.where).toMatch(/ is valid\n/);
    }

    // README: "docs/plugins/: ..., each with a complete bots.yaml".
    const pluginPages = [...byPage.keys()].filter((page) => page.startsWith('docs/plugins/'));
    expect(pluginPages.length).toBeGreaterThanOrEqual(9);
    for (const page of pluginPages) expect(byPage.get(page)!.map((example) => example.kind), page).toContain('bots.yaml');
  });

  test('groupwire check, as a user runs it, accepts the first example of docs/gateways.md', async () => {
    const [first] = examplesOf(join(ROOT, 'docs/gateways.md'), 'docs/gateways.md').yaml;
    expect(first?.kind).toBe('bots.yaml');
    const dir = mkdtempSync(join(scratch, 'gateways-'));
    writeFileSync(join(dir, 'bots.yaml'), first!.text);
    const env = Object.fromEntries(variablesOf(first!.text).map((name) => [name, dummyValue(name)]));
    expect(Object.keys(env)).toContain('BOT_PASSWORD');
    const checked = await runCli(['check', 'bots.yaml'], cleanEnv(env), dir);
    expect(checked.stderr).toBe('');
    expect(checked.stdout).toMatch(/^bots\.yaml is valid\n/);
    expect(checked.code).toBe(0);
  });
});
