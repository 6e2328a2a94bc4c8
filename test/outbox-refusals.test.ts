import { afterEach, describe, expect, test } from 'vitest';
import { chatOf, history, makeEnv, post, probes, waitFor, type Env } from './helpers/supervisor.js';

/**
 * Posts the service refuses on the chat socket (an error object as a frame, docs/protocol.md "Rate
 * limits" and "Text fields"): a post refused for rate is sent again after the wait the service names,
 * once; a post refused for its text is cleaned and sent again (#31 item 13); one that can never be taken
 * fails its promise and holds up nothing.
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

  test('a post with text the chat refuses is cleaned and posted, never dropped; the posts after it go on (#31 item 13)', { timeout: 30_000 }, async () => {
    env = await makeEnv([]);
    const sender = env.probe('sender');
    env.writeConfig([{ chats: [{ chat: 'general' }], plugins: [{ use: sender, with: { key: 'refused' } }] }]);
    await env.start();
    // Controls are refused in a chat message (docs/protocol.md "Text fields"): every post is cleaned (chatSafeText).
    await post(env.svc, 'general', 'bob', '!send general bad\u0001text \u001b[2Jcleared\u007f\u0085next');
    // Nothing visible (zero-width only) is refused as empty: the post the service refused is sent again, shown as codes.
    await post(env.svc, 'general', 'bob', '!send general \u200b\u2060');
    await post(env.svc, 'general', 'bob', '!send general fine text');
    const sends = () => probes().sends.refused ?? [];
    await waitFor('the three sends settled', () => sends().length === 3, 20_000);
    expect(sends().map((send) => send.ok)).toEqual([true, true, true]);
    const bot = env.client('bot');
    const general = (await chatOf(bot, 'general'))!;
    const botId = String(general.chat_sub!.user_id);
    const posted = (await history(bot, general.id)).filter((m) => String(m.user_id) === botId).map((m) => m.message);
    // The refused one goes again after it was refused: after the post that followed it.
    expect([...posted].sort()).toEqual(['\\u{200b}\\u{2060}', 'badtext [2Jcleared\nnext', 'fine text']);
    expect(env.log.lines.some((line) => /refused a post for its text; it is cleaned and sent again/.test(String(line.msg)))).toBe(true);
    expect(env.log.lines.some((line) => line.level === 50 && /the service refused a post/.test(String(line.msg)))).toBe(false);
  });
});
