import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompatClient } from './helpers/compat-client.js';
import { startTestService, type TestService } from './helpers/service.js';

/**
 * The compatibility suite (#21): the requests an MCP server for the service makes when an assistant
 * uses its tools: a token login with a JSON body, then Bearer; "list my groups" (getsubs), "describe a
 * group" (getgroup), "list topics" and "read a topic" paged to the end, "get message N" (getmessage
 * with group_name and msg_num) and "search" (searcharchives).
 */

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc.close());

describe('an MCP server', () => {
  it('answers every tool from the same archive, consistently', async () => {
    const client = new CompatClient(svc);
    const login = await client.send('POST', 'login', {}, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bob@example.com', password: 'bob-demo', token: true }),
    });
    expect(login.status).toBe(200);
    client.auth.bearer = login.json().token;

    const groups = await client.all('GET', 'getsubs', { limit: 100 });
    expect(groups.map((g) => [g.group_name, g.perms.archives_visible])).toEqual([['demo', true]]);
    const group = await client.ok('GET', 'getgroup', { group_name: groups[0].group_name });
    expect(group).toMatchObject({ object: 'group', id: groups[0].group_id });

    const topics = await client.all('GET', 'gettopics', { group_id: group.id, limit: 2 });
    expect(topics).toHaveLength(group.threads_count);
    let read = 0;
    for (const topic of topics) {
      const messages = await client.all('GET', 'gettopic', { topic_id: topic.id, limit: 2 });
      expect(messages, topic.subject).toHaveLength(topic.num_messages);
      for (const message of messages) {
        const again = await client.ok('GET', 'getmessage', { group_name: group.name, msg_num: message.msg_num });
        expect(again).toEqual(message);
        read += 1;
      }
    }
    expect(read).toBe(group.messages_count);

    const found = await client.all('GET', 'searcharchives', { group_name: group.name, q: topics[0].subject.split(' ')[0], limit: 100 });
    expect(found.some((hit) => hit.topic_id === topics[0].id)).toBe(true);
  });
});
