import { afterEach, describe, expect, test } from 'vitest';
import { chatOf, history, makeEnv, post, probes, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Posts the service refuses on the chat socket (an error object as a frame, docs/protocol.md "Rate
 * limits" and "Text fields"): a post refused for rate is sent again after the wait the service names,
 * once; a post that can never be taken (an invalid message) fails its promise and holds up nothing.
 */

let env: Env | undefined;

afterEach(async () => {
  await env?.close();
  env = undefined;
});

describe('the outbox and posts the service refuses', () => {
  test('posts refused for rate go again after the wait: each exactly once, none failed', { timeout: 60_000 }, async () => {
    // The chat posts' allowance (the numbers of --rate-limit): far below the bot's own reply rate.
    env = await makeEnv([], { rateLimit: { perSecond: 4, burst: 4 } });
    const sender = env.probe('sender');
    env.writeConfig([{ chats: [{ chat: 'general' }], reply_rate: { per_second: 200, burst: 100 }, plugins: [{ use: sender, with: { key: 'burst' } }] }]);
    const supervisor = await env.start();
    // 20 posts asked for at once (the probe's `!send` does not wait for its post).
    await post(env.svc, 'general', 'bob', '!send general answer {n}', 20);
    const sends = () => probes().sends.burst ?? [];
    await waitFor('20 sends settled', () => sends().length === 20, 45_000);
    expect(sends().filter((send) => !send.ok)).toEqual([]);
    const bot = env.client('bot');
    const general = (await chatOf(bot, 'general'))!;
    const answers = (await history(bot, general.id)).map((m) => m.message).filter((text) => text.startsWith('answer '));
    expect([...answers].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `answer ${i + 1}`).sort());
    const outbox = supervisor.bots[0]!.runners[0]!.outbox.stats;
    expect(outbox.resent).toBeGreaterThan(0);
    expect(outbox.failed).toBe(0);
    expect(env.log.lines.some((line) => /refused for rate; sending it again/.test(String(line.msg)))).toBe(true);
  });

  test('a post the service can never take fails its promise; the posts after it go on', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    const sender = env.probe('sender');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: sender, with: { key: 'refused' } }] }]);
    await env.start();
    // A control character is refused in a chat message (docs/protocol.md "Text fields").
    await post(env.svc, 'general', 'bob', '!send general bad\u0001text');
    await post(env.svc, 'general', 'bob', '!send general fine text');
    const sends = () => probes().sends.refused ?? [];
    await waitFor('both sends settled', () => sends().length === 2, 20_000);
    expect(sends()).toEqual([
      { chat: 'general', text: 'bad\u0001text', ok: false, error: 'PostFailedError' },
      { chat: 'general', text: 'fine text', ok: true },
    ]);
    expect(env.log.lines.some((line) => line.level === 50 && /the service refused a post/.test(String(line.msg)))).toBe(true);
  });
});
