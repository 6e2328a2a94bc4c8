import { afterEach, describe, expect, test } from 'vitest';
import { makeEnv, post, probes, type Env, waitFor } from './helpers/supervisor.js';
import { FakeSlack } from './fakes/slack/fake-slack.js';
import { TOKENS } from './fakes/slack/state.js';

/**
 * Issue 13 item 17: when auth.test cannot reach Slack, the log says why (the network's error, not only
 * the SDK's `request_error`), and the relay is the built-in `use: relay-slack`.
 */

let env: Env | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

describe('relay-slack: Slack cannot be reached', () => {
  test('the auth.test failure is logged with the network reason (a closed port: ECONNREFUSED), no stack', async () => {
    // The local Slack's address, after it stopped: nothing listens there any more.
    const slack = await FakeSlack.start();
    const apiUrl = slack.apiUrl;
    await slack.close();

    env = await makeEnv([]);
    env.writeConfig([{
      chats: [{ chat: 'general' }],
      plugins: [
        {
          use: 'relay-slack',
          with: { token: TOKENS.bot, app_token: TOKENS.app, api_url: apiUrl, channels: { general: 'C0GENERAL1' }, request_timeout_ms: 5_000 },
        },
        { use: env.probe('after'), with: { key: 'after-unreachable' } },
      ],
    }]);
    await env.start();

    const failed = await waitFor('the auth.test failure logged', () => env!.log.withMessage('Slack auth.test failed; trying again')[0]);
    expect(failed).toMatchObject({ level: 40, plugin: 'relay-slack', code: 'request_error' });
    const port = new URL(apiUrl).port;
    expect(String(failed.reason)).toMatch(new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`));
    expect(failed.err).toBeUndefined();

    // The bot and the plugins after the relay go on meanwhile.
    await post(env.svc, 'general', 'bob', 'the chain goes on');
    await waitFor('the next plugin saw it', () => probes().seen['after-unreachable']?.some((seen) => seen.text === 'the chain goes on'));
  }, 60_000);
});
