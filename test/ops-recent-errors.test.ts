import { describe, expect, it } from 'vitest';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { createLogger } from '../src/supervisor/logging.js';

/** The status page's "last errors": read off the log lines as written, so redaction applies first. */
describe('RecentErrors', () => {
  it('keeps warnings and errors (newest first, with bot, chat and plugin), skips info, and sees only redacted lines', () => {
    const errors = new RecentErrors(3);
    const written: string[] = [];
    const log = createLogger({ level: 'info', pretty: false, tee: errors, sink: { write: (line) => written.push(line) > 0 } });
    const bot = log.child({ bot: 'demo-bot' });
    bot.info('an ordinary line');
    bot.child({ chat: 'general' }).warn({ reason: 'closed with 1006', password: 'hunter2-secret' }, 'chat socket closed');
    bot.child({ plugin: 'relay-irc' }).error({ err: new Error('ECONNREFUSED 127.0.0.1:6667'), token: 'xoxb-secret' }, 'IRC connection failed');
    const list = errors.list();
    expect(list.map((entry) => entry.msg)).toEqual(['IRC connection failed', 'chat socket closed']);
    expect(list[0]).toMatchObject({ level: 'error', bot: 'demo-bot', plugin: 'relay-irc', detail: 'ECONNREFUSED 127.0.0.1:6667' });
    expect(list[1]).toMatchObject({ level: 'warn', bot: 'demo-bot', chat: 'general', detail: 'closed with 1006' });
    expect(JSON.stringify(list)).not.toMatch(/hunter2|xoxb-secret/);
    expect(written).toHaveLength(3);
    expect(errors.counts).toEqual({ warn: 1, error: 1, fatal: 0 });

    for (let index = 0; index < 5; index += 1) log.warn(`warning ${index}`);
    expect(errors.list().map((entry) => entry.msg)).toEqual(['warning 4', 'warning 3', 'warning 2']);
    expect(errors.counts.warn).toBe(6);
  });
});
