import { afterAll, beforeAll, expect, test } from 'vitest';
import { IrcServer, IrcWatcher, relayPlugin } from './helpers/irc-server.js';
import { RedisServer } from './helpers/redis-server.js';
import { startTestService, type TestService } from './helpers/service.js';
import { chatOf, history, waitFor } from './helpers/supervisor.js';
import { WorkerCluster } from './helpers/worker-cluster.js';
import { GroupsClient } from '../src/api/client.js';
import { DEMO } from './helpers/service.js';

/**
 * Failover on Redis (docs/scale-out.md): the worker running a relay-irc bot is killed (SIGKILL) and
 * lines are said on IRC while its lease runs out and another worker takes the bot over. The successor
 * reads the catch-up position its predecessor persisted in Redis and the channel's history (inspircd's
 * +H): every line said during the failover reaches the chat once, in order, and none twice.
 */

let redis: RedisServer;
let irc: IrcServer;
let svc: TestService;
let cluster: WorkerCluster;
let reader: GroupsClient;
const watchers: IrcWatcher[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
  irc = await IrcServer.start({ kind: 'inspircd', history: true });
  svc = await startTestService();
  cluster = new WorkerCluster(svc, redis, { leaseSeconds: 2 });
  reader = new GroupsClient({ baseUrl: svc.baseUrl, ca: svc.service.ca, credentials: { email: DEMO.carol[0], password: DEMO.carol[1] } });
}, 60_000);

afterAll(async () => {
  for (const watcher of watchers) watcher.close();
  await cluster?.close();
  await reader?.close();
  await svc?.close();
  await irc?.close();
  await redis?.stop();
});

async function chatLines(): Promise<string[]> {
  const messages = await history(reader, (await chatOf(reader, 'general'))!.id);
  return messages.flatMap((m) => {
    const line = /^(?:\[[^\]]+ UTC\] )?<([^>]+)> (.*)$/.exec(m.message);
    return line ? [`${line[1]}: ${line[2]}`] : [];
  });
}

test('an IRC line said during a failover is relayed once, by the worker that took the bot over', { timeout: 60_000 }, async () => {
  const alice = await IrcWatcher.connect(irc.port, 'alice', ['#general']);
  const dave = await IrcWatcher.connect(irc.port, 'dave', ['#general']);
  watchers.push(alice, dave);
  alice.send('MODE #general +H 200:1h');
  await alice.waitForLine(/ MODE #general \+H/);
  cluster.writeConfig([{ chats: [{ chat: 'general' }], plugins: [relayPlugin(irc)] }]);
  const joins = () => alice.lines.filter((line) => /^:gwbot!\S+ JOIN/i.test(line)).length;

  await cluster.start('w1');
  await waitFor('w1 in the channel', () => joins() === 1, 30_000);
  await cluster.start('w2');
  alice.send('PRIVMSG #general :before the failover');
  await waitFor('the first line in the chat', async () => (await chatLines()).includes('alice: before the failover'));

  await cluster.kill('w1');
  const said: string[] = [];
  for (let n = 1; n <= 6; n += 1) {
    const [who, other] = n % 2 === 1 ? [alice, dave] : [dave, alice];
    who.send(`PRIVMSG #general :during the failover ${n}`);
    said.push(`${who.nick}: during the failover ${n}`);
    await other.waitForLine(new RegExp(`^:${who.nick}!\\S+ PRIVMSG #general :during the failover ${n}$`), 5000);
  }
  await waitFor('w2 in the channel', () => joins() === 2, 30_000);
  await waitFor('the lines in the chat', async () => (await chatLines()).includes(said.at(-1)!), 30_000);
  alice.send('PRIVMSG #general :after the failover');
  await waitFor('the live line', async () => (await chatLines()).includes('alice: after the failover'));
  const lines = await chatLines();
  expect(lines.filter((line) => line.startsWith('alice:') || line.startsWith('dave:'))).toEqual(['alice: before the failover', ...said, 'alice: after the failover']);
  expect(lines.filter((line) => line.startsWith('gwbot'))).toEqual([]);
  // The figures for the closing note (asserted above).
  process.stdout.write(`catch-up figures: inspircd +H, failover on Redis (SIGKILL of the worker): ${said.length} lines said on IRC during the failover, ${lines.filter((line) => said.includes(line)).length} recovered\n`);
});
