import { afterEach, describe, expect, test } from 'vitest';
import { post, probes, waitFor } from './helpers/supervisor.js';
import { relaySetup, type RelaySetup } from './fakes/slack/harness.js';

/** A token Slack refuses stops the relay only: logged clearly, the supervisor and the other plugins go on. */

let setup: RelaySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

const stoppedLine = (setup: RelaySetup) => setup.env.log.lines.find((line) => String(line.msg).startsWith('relay-slack stopped'));

describe('relay-slack: refused tokens', () => {
  test('an invalid bot token stops the relay; the rest of the chain and the bot go on', async () => {
    setup = await relaySetup({ after: (env) => [{ use: env.probe('after'), with: { key: 'bad-bot' } }] });
    const { env, slack } = setup;
    slack.revoke('bot');
    await setup.start();
    await waitFor('the relay stopped', () => setup!.stats().disabled === 1);
    expect(stoppedLine(setup)).toMatchObject({ level: 50, plugin: 'relay-slack', code: 'invalid_auth' });
    expect(String(stoppedLine(setup)!.msg)).toContain('check token');

    await post(env.svc, 'general', 'bob', 'still handled');
    await post(env.svc, 'random', 'bob', 'also handled');
    await waitFor('the next plugin saw both', () => probes().seen['bad-bot']?.length === 2);
    expect(setup.stats()).toMatchObject({ skipped: 2, relayed_out: 0, queued: 0 });
    expect(slack.api.calls.map((c) => c.method)).toEqual(['auth.test']);
    expect(slack.socket.opened).toBe(0);
    expect(env.supervisor!.bots[0]!.runners.every((r) => r.connection.state === 'open')).toBe(true);
  });

  test('an invalid app token stops the relay (Socket Mode and posting), nothing else', async () => {
    setup = await relaySetup({ after: (env) => [{ use: env.probe('after'), with: { key: 'bad-app' } }] });
    const { env, slack } = setup;
    slack.revoke('app');
    await setup.start();
    await waitFor('the relay stopped', () => setup!.stats().disabled === 1);
    expect(stoppedLine(setup)).toMatchObject({ level: 50, code: 'invalid_auth' });
    expect(String(stoppedLine(setup)!.msg)).toContain('check app_token');
    await post(env.svc, 'general', 'bob', 'not relayed');
    await waitFor('the next plugin saw it', () => probes().seen['bad-app']?.length === 1);
    expect(setup.stats()).toMatchObject({ skipped: 1, relayed_out: 0 });
  });

  test('a token revoked while running stops the relay; what was queued stays for the next start', async () => {
    setup = await relaySetup();
    const { env, slack } = setup;
    await setup.start();
    await setup.connections(1);
    await post(env.svc, 'general', 'bob', 'before');
    await waitFor('the first post', () => slack.posts.length === 1);
    slack.revoke('bot');
    await post(env.svc, 'general', 'bob', 'after the revocation');
    await waitFor('the relay stopped', () => setup!.stats().disabled === 1);
    expect(setup.stats()).toMatchObject({ relayed_out: 1, queued: 1 });
    // Its Socket Mode link closed too.
    await waitFor('the socket closed', () => slack.socket.openConnections().length === 0);

    // The same app token revoked during a reconnect does not take the process down either.
    await setup.env.supervisor!.stop();
    slack.api.revoked.clear();
    await setup.start();
    await waitFor('the queued post', () => slack.posts.length === 2);
    expect(slack.posts.map((p) => p.text)).toEqual(['before', 'after the revocation']);
    await setup.connections(2);
    slack.revoke('app');
    slack.socket.drop();
    await waitFor('the relay stopped again', () => setup!.stats().disabled === 1);
    expect(stoppedLine(setup)).toMatchObject({ code: 'invalid_auth' });
    expect(String(stoppedLine(setup)!.msg)).toContain('check app_token');
  });
});
