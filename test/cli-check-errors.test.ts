import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { at, botsFiles } from './helpers/bots-files.js';
import { cleanEnv, ROOT, runCli } from './helpers/cli.js';

// `groupwire check` and `groupwire plugins` as a user meets them: the CLI as a child process.

const files = botsFiles('gw-cli-check-');
const { dir, write } = files;
afterAll(() => files.remove());

const BOT = ['  - name: a', '    login: { email: bot@example.com, password: pw }', '    chats:', '      - { group: demo, chat: general }'];

async function check(lines: string[]): Promise<{ file: string; stderr: string }> {
  const file = write(lines);
  const result = await runCli(['check', file], cleanEnv(), dir);
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  return { file, stderr: result.stderr };
}

describe('groupwire check explains mistakes', () => {
  it('a ca_file that does not exist', async () => {
    const lines = ['service:', '  base_url: https://gds.example', '  ca_file: ./x.pem', 'bots:', ...BOT];
    const { file, stderr } = await check(lines);
    expect(stderr).toContain(`${at(file, lines, 3, './x.pem')}: ca_file ./x.pem does not exist`);
  });

  it('an unknown plugin name lists the built-ins and suggests the nearest', async () => {
    const lines = ['service:', '  base_url: https://gds.example', 'bots:', ...BOT, '    plugins:', '      - use: relay-ircc'];
    const { file, stderr } = await check(lines);
    expect(stderr).toContain(`${at(file, lines, 9, 'relay-ircc')}: no plugin named relay-ircc (did you mean relay-irc?): ` +
      "the built-ins are logger, responder, relay-slack, relay-irc, relay-discord, relay-matrix, relay-telegram, relay-mattermost, relay-zulip, relay-rocketchat, relay-xmpp, http-api, group-mail ('groupwire plugins' lists them)");
  });

  it('a misspelt key of bots.yaml says the nearest at its line', async () => {
    const lines = ['service:', '  base_url: https://gds.example', 'bots:', ...BOT, '    chanels: []'];
    const { file, stderr } = await check(lines);
    expect(stderr).toContain(`${at(file, lines, 8, 'chanels')}: unknown key 'chanels' (did you mean 'chats'?) (at bots.0.chanels)`);
  });

  it('a misspelt key in any map says the key and the nearest, once: under service:, in a login, in a gateway endpoint (#36 item 9)', async () => {
    const lines = ['service:', '  base_ur: https://gds.example', 'bots:', '  - name: a', '    login: { email: bot@example.com, passwrd: pw }',
      '    chats:', '      - { group: demo, chat: general }', 'gateways:', '  - name: g', '    endpoints:', '      - { bto: a, chat: general }',
      '      - { irc: "#general" }'];
    const { file, stderr } = await check(lines);
    expect(stderr.replace(/^groupwire: /, '').trimEnd().split('\n')).toEqual([
      `${at(file, lines, 2, 'base_ur')}: unknown key 'base_ur' (did you mean 'base_url'?) (at service.base_ur)`,
      `${at(file, lines, 5, 'passwrd')}: unknown key 'passwrd' (did you mean 'password'?) (at bots.0.login.passwrd)`,
      `${at(file, lines, 11, 'bto')}: unknown key 'bto' (did you mean 'bot'?) (at gateways.0.endpoints.0.bto)`,
    ]);
  });

  it("a misspelt key of a built-in plugin's strict with:", async () => {
    const lines = ['service:', '  base_url: https://gds.example', 'bots:', ...BOT, '    plugins:', '      - use: logger', '        with: { dir: ./t, fromat: html }'];
    const { file, stderr } = await check(lines);
    expect(stderr).toContain(`${at(file, lines, 10, 'fromat')}: unknown key 'fromat' (did you mean 'format'?) (at bots.0.plugins.0.with.fromat)`);
  });

  it('a YAML indentation mistake in plain words, the library wording after', async () => {
    const lines = ['service:', '  base_url: https://gds.example', 'bots:', '  - name: a', '     login: { email: bot@example.com, password: pw }'];
    const { file, stderr } = await check(lines);
    expect(stderr).toMatch(new RegExp(`${escape(file)}:5:6: the indentation is off: the key 'login' is indented deeper than 'name', the first key of its list item \\(line 4, column 5\\): .* \\(yaml: Nested mappings are not allowed in compact mappings\\)`));
    expect(stderr.split('\n').filter((line) => line.includes(file))).toHaveLength(1);
  });

  it('a key of a list item indented less than the item\'s other keys', async () => {
    const lines = ['service:', '  base_url: https://gds.example', 'bots:', '  - name: a', '   login: { email: bot@example.com, password: pw }'];
    const { file, stderr } = await check(lines);
    expect(stderr).toMatch(new RegExp(`${escape(file)}:5:4: the indentation is off: the key 'login' starts at column 4, but the keys of its map above at column 5 \\(line 4\\): indent it like them \\(yaml: Sequence item without - indicator`));
  });

  it('a list item indented too little is named at its own line, not where the parser noticed (the file\'s last line) (#36 item 9)', async () => {
    const head = ['service:', '  base_url: https://gds.example', 'bots:', '  - name: a', '    login: { email: bot@example.com, password: pw }', '    chats:'];
    // The first plugin two columns short: the parser reports line 10 and the last line, 12.
    const plugin = [...head, '      - { group: demo, chat: general }', '    plugins:', '    - use: logger', '        with:', '          dir: ./t', '      - use: responder'];
    // The second chat two columns short, among the bots; the line after it still belongs to the bot.
    const chat = [...head, '      - { group: demo, chat: general }', '    - { group: demo, chat: random }', '    plugins: [{ use: logger }]'];
    const [first, second] = await Promise.all([check(plugin), check(chat)]);
    expect(first.stderr).toBe(`groupwire: ${first.file}:9:5: the indentation is off: this list item is indented too little: its next line (10) and the next item ` +
      'of its list (line 12) are 2 columns further in: indent it like them (yaml: Nested mappings are not allowed in compact mappings)\n');
    expect(second.stderr).toBe(`groupwire: ${second.file}:8:5: the indentation is off: this list item starts at column 5, but the items of its list above ` +
      'at column 7 (line 7): indent it like them (yaml: A block sequence may not be used as an implicit map key)\n');
  });

  it('a schema mistake does not hide the others: a missing ca_file and an unknown plugin name are said with it, in file order', async () => {
    const lines = ['service: { base_url: "https://gds.example", ca_file: ./nope.pem }', 'bots:', '  - name: a',
      '    login: { email: bot@example.com, password: pw }', '    chanels: [{ group: demo, chat: general }]', '    plugins: [{ use: relay-ircc }]'];
    const { file, stderr } = await check(lines);
    const said = stderr.split('\n').filter((line) => line.includes(file)).map((line) => line.replace(/^groupwire: /, ''));
    expect(said.map((line) => line.slice(0, line.indexOf(': ')))).toEqual([
      at(file, lines, 1, './nope.pem'), at(file, lines, 5, 'chanels'), at(file, lines, 6, 'relay-ircc'),
    ]);
    expect(said[0]).toContain('ca_file ./nope.pem does not exist');
    // The chats: it misses is the key it misspelt: said once, as the unknown key.
    expect(said[1]).toContain("unknown key 'chanels' (did you mean 'chats'?)");
    expect(said[2]).toContain('no plugin named relay-ircc (did you mean relay-irc?)');
  });

  it('a tab, an unclosed quote and a missing colon', async () => {
    expect((await check(['service:', '\tbase_url: x'])).stderr).toMatch(/:2:1: a tab is used to indent: YAML indents with spaces only \(yaml: Tabs/);
    expect((await check(['service:', '  base_url: "https://x', 'bots: []'])).stderr).toMatch(/a quoted value is not closed: its closing quote is missing \(yaml: Missing closing "quote\)/);
    expect((await check(['service: {}', 'bots', 'log: {}'])).stderr).toMatch(/:2:1: a key without a colon \(or a key split over two lines\): write "key: value" on one line \(yaml: /);
  });
});

describe('groupwire plugins', () => {
  it('lists each built-in on one line with its docs page, and where the pages are', async () => {
    const result = await runCli(['plugins'], cleanEnv(), dir);
    expect(result.code).toBe(0);
    for (const name of ['logger', 'responder', 'relay-slack', 'relay-irc', 'relay-discord', 'relay-matrix', 'relay-telegram', 'relay-mattermost', 'relay-zulip', 'relay-rocketchat', 'relay-xmpp', 'http-api', 'group-mail']) {
      expect(result.stdout).toMatch(new RegExp(`^  ${name} +\\S.* docs/plugins/${name}\\.md$`, 'm'));
    }
    expect(result.stdout).toContain(`in the groupwire package's docs/ (here: ${join(ROOT, 'docs', 'plugins')})`);
    expect((await runCli(['--help'], cleanEnv(), dir)).stdout).toMatch(/^ {2}plugins +the built-in plugins/m);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
