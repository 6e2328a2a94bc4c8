import { afterEach, describe, expect, test } from 'vitest';
import { EMAILS } from './helpers/service.js';
import { adminOk, chatOf, history, makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Issue #31 item 14: the responder's answers put other people's text (topic subjects, search hits, a
 * caller's words in a rule's template) between its own words; a right-to-left override in that text is
 * closed at the end of its field, so the rest of the answer is not reversed. Against the local service.
 */

const RLO = '\u202e';
const PDF = '\u202c';

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

async function answerTo(e: Env, text: string): Promise<string> {
  const bot = e.client('bot');
  const botId = String((await bot.login()).id);
  const general = (await chatOf(bot, 'general'))!;
  const asked = await post(e.svc, 'general', 'bob', text);
  const answer = await waitFor(`the answer to ${text}`, async () =>
    (await history(bot, general.id)).find((m) => m.msg_num > asked.msg_num && String(m.user_id) === botId), 20_000);
  return answer.message;
}

describe('responder: other people\'s bidi controls stay in their field', () => {
  test('!topics and a rule\'s template: an override is closed before the answer goes on', { timeout: 40_000 }, async () => {
    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [{ use: 'responder', with: { rules: [{ command: 'echo', args: [{ name: 'what', type: 'rest' }], reply: '{{user}} said: {{args.what}} (noted)' }] } }],
    }]);
    await env.start();
    // A subject as mail from elsewhere may bring it (the service's own API refuses bidi controls in subjects).
    await adminOk(env.svc, 'topics', { group: 'demo', user: EMAILS.alice, subject: `Invoice ${RLO}FDP.exe`, body: 'see attached' });
    const topics = await answerTo(env, '!topics 1');
    expect(topics.split('\n')[1]).toMatch(new RegExp(`^1\\. Invoice ${RLO}FDP\\.exe${PDF} — 1 message, last `));
    expect(await answerTo(env, `!echo ${RLO}kool`)).toMatch(new RegExp(`said: ${RLO}kool${PDF} \\(noted\\)$`));
  });
});
