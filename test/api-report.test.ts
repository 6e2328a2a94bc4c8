import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateReports, reportChanges, UPDATE_COMMAND } from '../tools/api-report/reports.js';

/**
 * The public API (the package's exports and their types, the bots.yaml schema, the CLI's commands,
 * flags and exit codes, the metric names) is recorded in api/: a change to it fails here until the
 * reports are updated, so that a breaking change is always a decision (CHANGELOG.md's policy).
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const REPORTS = ['api/groupwire.api.md', 'api/cli.md', 'api/bots-yaml.schema.json', 'api/metrics.txt'];

describe('the public API reports (api/)', () => {
  let reports: Map<string, string>;
  beforeAll(async () => {
    reports = await generateReports(root);
  });

  it.each(REPORTS)('%s is what the code gives', async (file) => {
    const text = reports.get(file);
    expect(text, `no report ${file} was generated`).toBeDefined();
    const [change] = await reportChanges(root, new Map([[file, text!]]));
    if (change) expect.fail(`${file} is not what the code gives:\n\n${change.diff}\n\nIf the change is meant, run \`${UPDATE_COMMAND}\`, commit the reports and say it in CHANGELOG.md.`);
  });

  it('records what each part covers: exports with their types, the options of every plugin, every command and metric', () => {
    const api = reports.get('api/groupwire.api.md')!;
    expect(api).toContain('## groupwire\n');
    expect(api).toMatch(/\nfunction definePlugin</);
    expect(api).toMatch(/\nclass GroupsClient \{/);
    expect(api).toMatch(/\ninterface PlatformEndpoint \{/);
    const schema = JSON.parse(reports.get('api/bots-yaml.schema.json')!) as { $defs: Record<string, unknown> };
    expect(Object.keys(schema.$defs)).toEqual(expect.arrayContaining(['plugin-logger', 'plugin-relay-irc', 'plugin-responder']));
    const cli = reports.get('api/cli.md')!;
    expect(cli).toContain('- run: ./run-command.js runCommand');
    expect(cli).toContain('- 2 usage (EXIT.usage)');
    expect(cli).toContain('- --log-level string');
    expect(reports.get('api/metrics.txt')).toContain('\ngroupwire_chat_messages_total counter\n');
  });

  it('are the same on every machine: no absolute paths, no times', () => {
    for (const [file, text] of reports) {
      expect(text.includes(root), `${file} holds the checkout's path`).toBe(false);
      expect(/\d{4}-\d\d-\d\dT\d\d:\d\d/.test(text), `${file} holds a time`).toBe(false);
    }
  });

  it('a changed report fails with a unified diff and the command that updates it', async () => {
    const text = reports.get('api/metrics.txt')!;
    const changed = text.replace('groupwire_chat_messages_total counter\n', 'groupwire_chat_messages_total counter\ngroupwire_chat_new_total counter\n');
    const [change] = await reportChanges(root, new Map([['api/metrics.txt', changed]]));
    expect(change?.file).toBe('api/metrics.txt');
    expect(change?.diff).toMatch(/^--- api\/metrics.txt \(checked in\)\n\+\+\+ api\/metrics.txt \(generated\)\n@@ -\d+,6 \+\d+,7 @@\n/);
    expect(change?.diff).toContain('\n groupwire_chat_messages_total counter\n+groupwire_chat_new_total counter\n groupwire_chat_outbox_depth gauge');
    expect(UPDATE_COMMAND).toBe('npm run api:update');
  });
});
