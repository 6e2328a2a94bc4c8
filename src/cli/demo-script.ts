import { readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { GroupsClient } from '../api/client.js';
import type { Chat } from '../api/types.js';
import { sleep } from '../chat/backoff.js';
import { DEMO_ACCOUNTS } from '../service/demo-seed.js';
import { mkdirPrivate, writeFilePrivate } from '../store/private-files.js';

/** What carol, the demo's scripted member, says in #general. */
export const SCRIPT = ['Hi everyone! Is the demo bot around?', '!ping', '!help'];
/** The topic carol then posts in the group's archive (through drafts, as a mail client would): the bot announces it in #general. */
export const SCRIPT_TOPIC = { subject: 'Demo day on Friday', body: 'Who is coming to the demo day? Reply here, or say so in #general.' };

/**
 * How far carol got in this conversation (`<state_dir>/demo-script.json`): she plays her part once per
 * conversation, not once per start, and a run stopped half-way is continued where it stopped. It is
 * cleared with the conversation (`--fresh`).
 */
export interface ScriptProgress {
  lines_said: number;
  topic_posted: boolean;
}

const NOTHING_YET: ScriptProgress = { lines_said: 0, topic_posted: false };

export async function readScriptProgress(file: string): Promise<ScriptProgress> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return NOTHING_YET;
  }
  try {
    const saved = JSON.parse(text) as Partial<ScriptProgress>;
    return { lines_said: Number(saved.lines_said) || 0, topic_posted: saved.topic_posted === true };
  } catch {
    // A file that is not ours to read: carol plays her part again rather than the demo failing.
    return NOTHING_YET;
  }
}

async function saveScriptProgress(file: string, progress: ScriptProgress): Promise<void> {
  // Written whole and renamed: a crash leaves the old progress or the new one.
  await mkdirPrivate(dirname(file));
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFilePrivate(temporary, `${JSON.stringify(progress)}\n`);
  await rename(temporary, file);
}

export function scriptDone(progress: ScriptProgress): boolean {
  return progress.lines_said >= SCRIPT.length && progress.topic_posted;
}

export interface ScriptRun {
  baseUrl: string;
  ca: string;
  /** The progress file, read and written as carol goes. */
  progressFile: string;
  signal: AbortSignal;
  /** Resolves once the bot has read the group's archive: a topic posted before would be its starting point, not news. */
  archiveReady: () => Promise<void>;
}

/** carol's lines in #general, then her topic; what an earlier run of this conversation did is not done again. */
export async function runScript(run: ScriptRun): Promise<void> {
  const progress = await readScriptProgress(run.progressFile);
  if (scriptDone(progress)) return;
  const carol = new GroupsClient({ baseUrl: run.baseUrl, ca: run.ca, credentials: { email: DEMO_ACCOUNTS.carol.email, password: DEMO_ACCOUNTS.carol.password } });
  try {
    if (progress.lines_said < SCRIPT.length) {
      const general = await generalOf(carol);
      const ws = await carol.openChatSocket({ chatsubId: general.chat_sub!.id, noHistory: true });
      for (const line of SCRIPT.slice(progress.lines_said)) {
        if (run.signal.aborted) break;
        ws.send(JSON.stringify({ object: 'chat_post', message: line }));
        progress.lines_said += 1;
        await saveScriptProgress(run.progressFile, progress);
        await sleep(1000, run.signal);
      }
      ws.close(1000, 'script done');
    }
    await run.archiveReady();
    if (run.signal.aborted) return;
    const draft = await carol.newDraft({ group_name: 'demo', draft_type: 'draft_type_post', subject: SCRIPT_TOPIC.subject });
    await carol.updateDraft({ draft_id: draft.id, body: SCRIPT_TOPIC.body });
    await carol.postDraft({ draft_id: draft.id });
    progress.topic_posted = true;
    await saveScriptProgress(run.progressFile, progress);
  } finally {
    await carol.close();
  }
}

async function generalOf(client: GroupsClient): Promise<Chat> {
  const chats = await client.getChats({ group_name: 'demo' });
  const general = chats.data.find((chat) => chat.subject === 'general');
  if (!general?.chat_sub) throw new Error('the demo group has no #general this account is in');
  return general;
}
