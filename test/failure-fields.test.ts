import { describe, expect, test } from 'vitest';
import { failureFields, GroupsClient, PostFailedError, reasonOf } from '../src/index.js';
import { freePort } from './helpers/ports.js';

describe('failureFields: expected failures are a reason, surprises keep their stack', () => {
  test('a service that cannot be reached is a one-line reason with the network error', async () => {
    const client = new GroupsClient({ baseUrl: `https://127.0.0.1:${await freePort()}`, credentials: { email: 'a@example.com', password: 'x' } });
    const error = await client.login().then(() => undefined, (e: unknown) => e);
    await client.close();
    const fields = failureFields(error);
    expect(fields).toEqual({ reason: expect.stringMatching(/^login: .*ECONNREFUSED/) });
  });

  test('an error class the caller expects is a reason; anything else is { err }', () => {
    expect(failureFields(new PostFailedError('the chat is closed'), PostFailedError)).toEqual({ reason: 'the chat is closed' });
    const bug = new TypeError('x is undefined');
    expect(failureFields(bug)).toEqual({ err: bug });
    expect(failureFields(new PostFailedError('closed'))).toEqual({ err: expect.any(PostFailedError) });
  });

  test('reasonOf says the causes an SDK wraps (cause, original) with their codes', () => {
    const network = Object.assign(new Error('getaddrinfo ENOTFOUND slack.invalid'), { code: 'ENOTFOUND' });
    const wrapped = Object.assign(new Error('A request error occurred: getaddrinfo ENOTFOUND slack.invalid'), { code: 'slack_webapi_request_error', original: network });
    expect(reasonOf(wrapped)).toBe('A request error occurred: getaddrinfo ENOTFOUND slack.invalid (slack_webapi_request_error)');
    const plain = Object.assign(new Error('request_error'), { original: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) });
    expect(reasonOf(plain)).toBe('request_error: connect ECONNREFUSED 127.0.0.1:9');
  });
});
