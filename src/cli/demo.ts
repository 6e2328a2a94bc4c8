import { constants } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { sleep } from '../chat/backoff.js';
import { loadBotsConfig, type LoadedConfig } from '../config/bots-config.js';
import { packageRoot } from '../config/package-root.js';
import { DEMO_ACCOUNTS } from '../service/demo-seed.js';
import type { LocalService } from '../service/local-service.js';
import { Operations } from '../ops/operations.js';
import { RecentErrors } from '../ops/recent-errors.js';
import { createLogger } from '../supervisor/logging.js';
import { Supervisor } from '../supervisor/supervisor.js';
import { DEMO_FILE } from './chat-command.js';
import { demoFileHolder, removeOwnDemoFile, writeDemoFile } from './demo-file.js';
import { readScriptProgress, runScript, scriptDone } from './demo-script.js';
import { demoStartCommands } from './demo-start-command.js';
import { demoState, orphanedState, savedConversation, shown, startOver, type DemoState } from './demo-state.js';
import { DemoView } from './demo-view.js';
import { shellWord } from './shell-word.js';
import { ignoreHangup, stopOnSignal } from './signals.js';
import { UsageError } from './usage-error.js';
import { writeOut } from './output.js';

export const DEMO_HELP = `Usage: groupwire demo [--config bots.yaml] [--fresh] [--log-level warn]

What npm start runs: the embedded local service, the bots of bots.yaml (the repo's: a demo bot with a
logger, a responder and group-mail) and a scripted member, carol, who says a few lines in #general
and posts a topic in the group, which the bot announces there: once per conversation, not at every
start (<state_dir>/demo-script.json says how far she got). The terminal shows every line of every
chat of the demo.

The conversation is kept: the service's data goes to <state_dir>/local-service.json (unless bots.yaml
sets service.embedded.state), beside the bots' cursors, so the next run continues it with the same
msg_nums. The service's CA stays in <that file>.tls/, so clients keep trusting the same ca_file.
When the bots' state is there but the service's data is not (a demo from before it was kept), the
demo starts over by itself: a bot that remembers later messages than the service has would be silent.
While it runs, ${DEMO_FILE} tells the client commands of other terminals where the demo is.

Options:
  --config FILE     the bots.yaml (default bots.yaml; when there is none, the demo's is copied there
                    first); service.base_url must be embedded
  --fresh           start over: remove the service's data, the bots' state (cursors, outbox, plugin
                    stores), the gateways' message map, carol's progress and the logger's
                    transcripts of the demo's chats; the CA is kept (npm start -- --fresh)
  --log-level L     pino level of the logs on stderr (default warn)
  -h, --help        this text
`;

/**
 * `npm start`: the embedded local service and the supervisor with the repo's bots.yaml. A scripted
 * member (carol) says a few lines in #general so the bot answers within seconds; the terminal shows
 * the conversation and how to join it.
 */
export async function demo(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: { config: { type: 'string' }, fresh: { type: 'boolean' }, 'log-level': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) {
    process.stdout.write(DEMO_HELP);
    return 0;
  }
  const configFile = values.config ?? 'bots.yaml';
  if (values.config === undefined) await writeDemoConfigIfNone(configFile);
  const loaded = await loadBotsConfig(configFile);
  if (loaded.config.service.base_url !== 'embedded') throw new UsageError(`the demo needs service.base_url: embedded in ${configFile}`);
  const state = demoState(loaded);
  const other = await demoFileHolder();
  // Two demos on one state would write the same service data and cursors over each other.
  if (other?.state_dir === state.stateDir) {
    throw new UsageError(`a demo is already running with ${shown(state.stateDir)} (process ${other.pid}, ${other.base_url}); `
      + `stop it first (Ctrl-C in its terminal), or delete ${DEMO_FILE} if that process is not a demo`);
  }
  await prepareState(state, values.fresh === true);

  const errors = new RecentErrors();
  const log = createLogger({ level: values['log-level'] ?? 'warn', pretty: loaded.config.log.pretty, tee: errors });
  // Before anything slow: a SIGHUP while starting must not end the demo either.
  ignoreHangup();
  const supervisor = await startFallingBack(loaded, log);
  const service = supervisor.localService!;
  // The status page and metrics, as `groupwire run` has them (on a free port when 9464 is taken).
  const operations = new Operations({
    supervisor, config: loaded.config.ops, log, errors, stateDir: state.stateDir, freePortIfTaken: true,
  });
  await operations.start();
  const view = new DemoView(service, (line) => writeOut(`${line}\n`));
  // Ctrl-C is handled from here on, also while the bot joins and carol talks: the demo always stops cleanly.
  const stop = new AbortController();
  const stopped = stopOnSignal(async () => {
    stop.abort();
    view.stop();
    await operations.close();
    await supervisor.stop();
  });
  // A second Ctrl-C exits at once: the service's data is saved first, so it is never behind what the
  // bot already handled, and the demo file does not outlive the demo.
  process.once('exit', () => {
    service.saveStateNow();
    removeOwnDemoFile();
  });
  // Not over the file of another demo or serve that is running here: its clients still need it.
  if (other) writeOut(`Not writing ${DEMO_FILE}: process ${other.pid} (${other.base_url}) is using it; use the export lines below.\n`);
  else await writeDemoFile({ base_url: service.baseUrl, ca_file: service.caFile, pid: process.pid, state_dir: state.stateDir });

  printWhere(service, operations.url);
  writeOut(`\nEarlier in the demo's chats:\n`);
  view.showRecent(3);
  view.start();
  try {
    await Promise.race([introduce(supervisor, service, state, stop.signal), stopped]);
  } catch (error) {
    // What a Ctrl-C cut short is no error; anything else ends the demo.
    if (!stop.signal.aborted) {
      view.stop();
      await operations.close();
      await supervisor.stop();
      removeOwnDemoFile();
      throw error;
    }
  }
  await stopped;
  removeOwnDemoFile();
  writeOut(`\nThe demo stopped; its conversation is saved in ${shown(state.stateDir)}.\n`);
  return 0;
}

/**
 * In a folder without a bots.yaml (a project that just ran `npm install groupwire`), the demo's own,
 * which the package ships, is copied here first: the demo's state then goes to this folder's
 * .groupwire/ as in a checkout, and `groupwire check` and `groupwire run` find the same file after it.
 * A bots.yaml that is there is never touched.
 */
async function writeDemoConfigIfNone(configFile: string): Promise<void> {
  try {
    await copyFile(join(packageRoot(), 'bots.yaml'), configFile, constants.COPYFILE_EXCL);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  writeOut(`No ${configFile} here: wrote ./${configFile}, the demo's (edit it to make your own bots; groupwire's docs/bots.md explains every key).\n`);
}

/** The bot joins, carol talks (once per conversation), and the terminal says how to join in. */
async function introduce(supervisor: Supervisor, service: LocalService, state: DemoState, signal: AbortSignal): Promise<void> {
  writeOut(`\nThe demo bot is joining #general, #random and #standup ...\n`);
  await supervisor.connected();
  if (signal.aborted) return;
  if (scriptDone(await readScriptProgress(state.scriptProgress))) {
    writeOut(`The bot is in. Carol did her part of the demo in this conversation already (${demoStartCommands().fresh} starts over).\n`);
  } else {
    writeOut(`The bot is in. Carol says a few things in #general, then posts a topic in the group:\n`);
    await runScript({
      baseUrl: service.baseUrl, ca: service.ca, progressFile: state.scriptProgress, signal, archiveReady: () => archiveRead(supervisor, signal),
    });
  }
  if (signal.aborted) return;
  writeOut(`
Join the conversation from another terminal (everything said in the demo shows here):
  npx groupwire chat --as bob general        (or --as alice, mo, carol; chats: general, random, standup)
Say !ping or !help to the bot. New topics of the demo group are announced in #general; post one as bob:
  export GROUPWIRE_EMAIL=bob@example.com GROUPWIRE_PASSWORD=bob-demo
  npx groupwire api newdraft --group_name demo --draft_type draft_type_post --subject Lunch --body 'Who joins?'
  npx groupwire api postdraft --draft_id <the id it answered>
alice (the owner) and mo (a moderator) may also use !announce Subject | text (the bot posts a topic in
the group), !activity, and in
#standup, the bot's own chat, !subject TEXT and !close, then !reopen standup from #general.
Transcripts are written to ./transcripts. Ctrl-C stops the demo; the next ${demoStartCommands().start} continues it.

`);
}

/** Continues the saved conversation, or starts over when asked or when only half of it is left. */
async function prepareState(state: DemoState, fresh: boolean): Promise<void> {
  const where = shown(state.stateDir);
  const orphaned = !fresh && (await orphanedState(state));
  if (fresh || orphaned) {
    const removed = await startOver(state);
    const why = fresh ? 'Starting over (--fresh)' : `The bot's state in ${where} belongs to a conversation the service no longer has (a demo from before its data was kept): starting over`;
    writeOut(removed.length > 0 ? `${why}; removed:\n${removed.map((line) => `  ${line}\n`).join('')}` : `${why}: nothing was saved yet.\n`);
    writeOut(`The service's CA stays in ${shown(`${state.serviceState}.tls`)}.\n`);
    return;
  }
  const { start, fresh: startOverCommand } = demoStartCommands();
  writeOut(await savedConversation(state)
    ? `Continuing the demo's conversation saved in ${where} (${startOverCommand} starts over).\n`
    : `A new demo; its conversation is saved in ${where}, so the next ${start} continues it (${startOverCommand} starts over).\n`);
}

function printWhere(service: LocalService, opsUrl: string | undefined): void {
  const alice = DEMO_ACCOUNTS.alice;
  writeOut(`
groupwire demo: the local service is at ${service.baseUrl}${opsUrl ? `\nThe bot's live status page: ${opsUrl}/status (Prometheus metrics at ${opsUrl}/metrics)` : ''}
For the client commands in another terminal (the demo's accounts and passwords are public):
  export GROUPWIRE_URL=${shellWord(service.baseUrl)} GROUPWIRE_CA_FILE=${shellWord(service.caFile ?? '')}
  export GROUPWIRE_EMAIL=${alice.email} GROUPWIRE_PASSWORD=${alice.password}
  npx groupwire activity --group demo        (or groups, topics, archive, api, transcript)
`);
}

async function startFallingBack(loaded: LoadedConfig, log: Logger): Promise<Supervisor> {
  try {
    return await Supervisor.start(loaded, { log });
  } catch (error) {
    const embedded = loaded.config.service.embedded;
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || !embedded) throw error;
    writeOut(`port ${embedded.port} is taken; using a free one\n`);
    embedded.port = 0;
    return Supervisor.start(loaded, { log });
  }
}

/** Until every bot's group-mail has read the group's archive once (at most 15 s; at once without group-mail). */
async function archiveRead(supervisor: Supervisor, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + 15_000;
  const polls = () => Object.values(supervisor.stats() as Record<string, { plugins?: Record<string, { polls?: number }> }>)
    .map((bot) => bot.plugins?.['group-mail']?.polls);
  while (!signal.aborted && Date.now() < deadline && polls().some((count) => count !== undefined && count < 1)) await sleep(100, signal);
}
