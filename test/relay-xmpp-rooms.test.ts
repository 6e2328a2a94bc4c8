import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { request } from 'undici';
import { RoomAbsences } from '../plugins/relay-xmpp/room-absences.js';
import { Operations } from '../src/ops/operations.js';
import { RecentErrors } from '../src/ops/recent-errors.js';
import { Prosody, RoomUser } from './helpers/prosody.js';
import { makeEnv, post, waitFor, type Env } from './helpers/supervisor.js';

/**
 * relay-xmpp and a room that will not have it for a while, on a real Prosody 0.12 where only alice (an
 * admin) may make rooms and a room made is locked until its owner configures it: the relay is refused
 * (`not-allowed`, then `item-not-found` while locked), kicked, and put out by the room's destruction; it
 * tries again with backoff and gets in each time, the chat's lines waiting meanwhile, and the relay shows
 * as down on /readyz and in /metrics while it is out.
 *
 * The room unlocked 30 s after the bot starts is the same run with a longer wait: the relay is
 * refused more times, at the backoff's pace, before the first try after the unlock gets it in. That
 * pace is checked below on a simulated clock; on Prosody it would cost 31.5 to 62 s of wall time (the
 * first try after 30 s), against this file's ~9 s, with nothing of the file's to overlap it.
 */

const PASSWORDS = { bot: 'bot-secret', alice: 'alice-secret' };

let prosody: Prosody;
let env: Env | undefined;
let ops: Operations | undefined;
const users: RoomUser[] = [];

beforeAll(async () => {
  prosody = await Prosody.start(PASSWORDS, { admins: ['alice'] });
});
afterAll(async () => {
  await prosody?.close();
});
afterEach(async () => {
  await ops?.close();
  await env?.close();
  await Promise.all(users.splice(0).map((user) => user.close()));
  env = undefined;
  ops = undefined;
});

const stats = (e: Env) => (e.supervisor!.stats() as Record<string, { plugins: Record<string, Record<string, number>> }>).bot0!.plugins['relay-xmpp']! as Record<string, number> & { room_refusals: number; joins: number; queued: number };
const connection = (e: Env) => e.supervisor!.bots[0]!.pluginReports().find((r) => r.instance === 'relay-xmpp')!.status.connection!;

async function get(path: string): Promise<string> {
  const answer = await request(`${ops!.url}${path}`);
  return answer.body.text();
}

/** The relay as /readyz lists it under relaysDown, or undefined. */
async function downOnReadyz(): Promise<{ state: string; detail?: string } | undefined> {
  const body = JSON.parse(await get('/readyz')) as { relaysDown: Array<{ instance: string; state: string; detail?: string }> };
  return body.relaysDown.find((relay) => relay.instance === 'relay-xmpp');
}

/** groupwire_plugin_relay_xmpp_rooms_not_joined as /metrics has it. */
async function roomsNotJoined(): Promise<number | undefined> {
  const line = (await get('/metrics')).split('\n').find((text) => text.startsWith('groupwire_plugin_relay_xmpp_rooms_not_joined{'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('relay-xmpp: a room that refuses the relay', () => {
  test('made and locked after the relay tried it, then a kick, then destroyed and made again: the relay gets in each time, the waiting lines arrive once each in order, /readyz lists it while it is out', { timeout: 60_000 }, async () => {
    const room = prosody.room(`late-${Date.now().toString(36)}`);
    env = await makeEnv([]);
    const e = env;
    e.writeConfig([{
      chats: [{ chat: 'general' }],
      reply_rate: { per_second: 200, burst: 200 },
      plugins: [{ use: 'relay-xmpp', with: { service: prosody.service, jid: `bot@${prosody.domain}`, password: PASSWORDS.bot, rooms: { general: room }, tls: { ca_file: prosody.caFile }, reflection_timeout_ms: 5_000 } }],
    }]);
    const supervisor = await e.start();
    ops = new Operations({ supervisor, config: { listen: '127.0.0.1:0', lag_probe_seconds: 1 }, log: e.log.logger, errors: new RecentErrors(), stateDir: e.stateDir });
    await ops.start();

    // The room does not exist and the bot may not make it: refused, tried again, shown down.
    await waitFor('the relay refused', () => stats(e).room_refusals >= 1);
    expect(connection(e)).toMatchObject({ state: 'rooms-missing', detail: expect.stringContaining(`${room} (not-allowed`) });
    expect(await downOnReadyz()).toMatchObject({ state: 'rooms-missing' });
    expect(await roomsNotJoined()).toBe(1);
    const shownDown = ['not made yet'];
    await post(e.svc, 'general', 'bob', 'before the room {n}', 3);

    // alice makes it: locked until she configures it, so the relay is refused again (item-not-found).
    const refusedBefore = stats(e).room_refusals;
    const owner = await RoomUser.join(prosody, 'alice', PASSWORDS.alice, room);
    users.push(owner);
    await waitFor('refused while locked', () => stats(e).room_refusals > refusedBefore && connection(e).detail?.includes('item-not-found') === true, 20_000);
    expect(stats(e).joins).toBe(0);
    expect(owner.from('groupwire')).toEqual([]);
    // Locked: down on /readyz meanwhile, with the reason.
    expect(await downOnReadyz()).toMatchObject({ state: 'rooms-missing', detail: expect.stringContaining('item-not-found') });
    expect(await roomsNotJoined()).toBe(1);
    shownDown.push('locked (item-not-found)');
    const refusalsBeforeTheUnlock = stats(e).room_refusals;
    await owner.unlock();
    await waitFor('the three lines in the room', () => owner.from('groupwire').length === 3, 20_000);
    await waitFor('shown joined', () => connection(e).state === 'connected');
    expect(await downOnReadyz()).toBeUndefined();
    expect(await roomsNotJoined()).toBe(0);

    // Kicked: out, then in again; the lines said meanwhile wait for it.
    await owner.kick('groupwire');
    await post(e.svc, 'general', 'bob', 'after the kick {n}', 2);
    await waitFor('joined again after the kick', () => stats(e).joins === 2, 20_000);
    await waitFor('the kick\'s lines in the room', () => owner.from('groupwire').length === 5, 20_000);

    // Destroyed: the bot may not make it again, so it is out until alice does (locked, then unlocked).
    await owner.destroy();
    await waitFor('shown out of the destroyed room', async () => (await downOnReadyz())?.detail?.includes(room) === true, 20_000);
    shownDown.push('destroyed');
    await post(e.svc, 'general', 'bob', 'while destroyed {n}', 2);
    await owner.enter();
    await owner.unlock();
    await waitFor('joined the room made again', () => stats(e).joins === 3, 30_000);
    await waitFor('every line in the room', () => owner.from('groupwire').length === 7, 20_000);
    await waitFor('the queue to XMPP empty', () => stats(e).queued === 0);

    expect(owner.from('groupwire')).toEqual([
      ...[1, 2, 3].map((n) => `<Bob Member> before the room ${n}`),
      ...[1, 2].map((n) => `<Bob Member> after the kick ${n}`),
      ...[1, 2].map((n) => `<Bob Member> while destroyed ${n}`),
    ]);
    expect(stats(e)).toMatchObject({ dropped: 0, rooms_not_joined: 0 });
    expect(await downOnReadyz()).toBeUndefined();
    // The figures for the closing note (asserted above).
    process.stdout.write(`XMPP room figures: refused ${refusalsBeforeTheUnlock} times before the unlock (${stats(e).room_refusals} in all), joined ${stats(e).joins} times without a restart, `
      + `7 chat lines waited while the room was out, ${owner.from('groupwire').length} reached it, ${stats(e).dropped} dropped; on /readyz's relaysDown while out: ${shownDown.join(', ')}\n`);
  });
});

describe('a room locked until 30 s after the start, on a simulated clock', () => {
  // The jitter's draw: the shortest waits, the middle ones, the longest.
  test.each([
    [0, [500, 1_500, 3_500, 7_500, 15_500, 31_500]],
    [0.5, [750, 2_250, 5_250, 11_250, 23_250, 47_250]],
    [1, [1_000, 3_000, 7_000, 15_000, 31_000]],
  ])('jitter %s: tried at the backoff\'s pace while locked, missing meanwhile, in at the first try after the unlock', (draw, expected) => {
    vi.useFakeTimers({ now: 0 });
    try {
      const tries: number[] = [];
      const absences: RoomAbsences = new RoomAbsences((room) => {
        tries.push(Date.now());
        absences.joining(room);
        if (Date.now() >= 30_000) absences.joined(room);
        else absences.refused(room, 'item-not-found');
      }, () => draw);
      absences.joining('late');
      absences.refused('late', 'item-not-found');
      vi.advanceTimersByTime(30_000);
      // Still missing at the unlock: the relay is shown down (rooms-missing, relaysDown on /readyz).
      expect(absences.rooms()).toEqual(['late']);
      vi.advanceTimersByTime(40_000);
      expect(tries).toEqual(expected);
      expect(absences.size).toBe(0);
      expect(absences.refusals).toBe(expected.length);
    } finally {
      vi.useRealTimers();
    }
  });
});
