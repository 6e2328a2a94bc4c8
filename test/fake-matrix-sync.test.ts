import { afterEach, expect, test } from 'vitest';
import { FakeMatrix } from './helpers/fake-matrix.js';

/**
 * The local homeserver's own work per /sync stays linear in its history. The platforms bench runs it in
 * the process where every hop is timed and says thousands of lines into one room: a /sync that looked
 * at the room's events once per event it answered (a position found by scanning the history) grew with
 * the square of the history, and every line said stalled the bench's event loop longer than the one
 * before (docs: BENCHMARKS.md "Gateway platforms").
 */

let fake: FakeMatrix | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

test('a /sync after a long history looks at each event of the history a bounded number of times', async () => {
  fake = await FakeMatrix.start();
  const bot = fake.addUser('bot', 'bot');
  const room = fake.addRoom('busy', { members: [bot.userId] });
  const history = 2_000;
  for (let n = 0; n < history; n += 1) fake.say(room, bot.userId, `line ${n}`);
  const total = fake.eventsIn(room).length;
  const before = fake.looked;
  const answer = await fetch(`${fake.url}/_matrix/client/v3/sync?since=s${total - 1}&timeout=0`, { headers: { authorization: `Bearer ${bot.token}` } });
  const body = await answer.json() as { rooms: { join: Record<string, { timeline: { events: Array<{ content: { body?: string } }> } }> } };
  // The one event after `since`, and no more.
  expect(body.rooms.join[room]!.timeline.events.map((event) => event.content.body)).toEqual([`line ${history - 1}`]);
  const looked = fake.looked - before;
  // A few passes over the history (the room's events, its members, the news after `since`), not one per event.
  expect(looked).toBeLessThanOrEqual(5 * total);
});
