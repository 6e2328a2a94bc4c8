import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorFromObject, explainError, TransportError } from '../src/index.js';
import { envFor, runCli } from './helpers/cli.js';
import { call, loginAs, ok, startTestService, type TestService } from './helpers/service.js';

/** Service errors as sentences a person understands (explainError), and `api` refusing unknown parameters. */

const refused = (type: string, extra: string, operation = 'getchats', retryAfter?: string) =>
  errorFromObject({ type, extra }, type === 'rate_limit' ? 429 : 400, operation, retryAfter);

describe('explainError', () => {
  it.each([
    [refused('bad_request', 'invalid group_name'), { group_name: 'demo' }, 'group "demo" was not found (bad_request: invalid group_name)'],
    [refused('bad_request', 'invalid group_id'), { group_name: 'demo' }, 'group "demo" was not found (bad_request: invalid group_id)'],
    [refused('bad_request', 'invalid group_id'), { group_id: '42' }, 'group 42 was not found (bad_request: invalid group_id)'],
    [refused('bad_request', 'invalid group_id'), {}, 'which group? give group_name or group_id (bad_request: invalid group_id)'],
    [refused('group_not_found', ''), { group_name: 'x' }, 'group "x" was not found (group_not_found)'],
    [refused('bad_request', 'invalid chat_id', 'updatechat'), { chat_id: '7' }, 'the chat 7 was not found (bad_request: invalid chat_id)'],
    [refused('bad_request', 'invalid subject', 'newchat'), { group_name: 'demo' }, 'subject is required (bad_request: invalid subject)'],
    [refused('bad_request', 'closed chat', 'joinchat'), undefined, 'the chat is closed (bad_request: closed chat)'],
    [refused('inadequate_permissions', 'view_activity', 'getactivitylog'), undefined,
      'only moderators can read the activity log (inadequate_permissions: view_activity)'],
    [refused('inadequate_permissions', 'chat owner', 'updatechat'), undefined,
      'only the chat\'s owner can change or delete it (inadequate_permissions: chat owner)'],
    [refused('inadequate_permissions', 'subscribed to the group', 'chat_post'), undefined,
      'you are banned from this group (or no longer a member), so you cannot post here (inadequate_permissions: subscribed to the group)'],
    [refused('inadequate_permissions', 'some_new_flag'), undefined, 'you lack the some_new_flag permission in this group (inadequate_permissions: some_new_flag)'],
    [refused('invalid_value', 'limit'), { limit: '500' }, 'limit must be a whole number from 1 to 100 (invalid_value: limit)'],
    [refused('invalid_value', 'filter_by'), { filter_by: 'all' }, 'filter_by "all" is not a valid value (invalid_value: filter_by)'],
    [refused('unauthorized_error', 'incorrect e-mail address or password', 'login'), undefined,
      'the e-mail address or password is wrong (unauthorized_error: incorrect e-mail address or password)'],
    [refused('rate_limit', 'too many requests', 'getchats', '3'), undefined, 'too many requests; try again in 3 s (rate_limit: too many requests)'],
    [refused('something_new', 'odd'), undefined, 'the service refused the request (something_new: odd)'],
  ])('%s', (error, params, sentence) => {
    expect(explainError(error, params && { params })).toBe(sentence);
  });

  it('uses the parameters attached to the error; never csrf', () => {
    const error = refused('bad_request', 'invalid csrf').withContext({ params: { csrf: 'secret-token', group_name: 'demo' } });
    expect(error.context?.params).toEqual({ group_name: 'demo' });
    expect(explainError(error)).toBe('csrf is required (bad_request: invalid csrf)');
    expect(explainError(refused('bad_request', 'invalid group_name').withContext({ params: { group_name: 'nope' } })))
      .toBe('group "nope" was not found (bad_request: invalid group_name)');
  });

  it('says the next archive download time once', () => {
    const error = refused('rate_limit', 'archive download allowed once per 24 hours; next allowed at 2030-01-02T03:04:05Z', 'downloadarchives');
    const text = explainError(error);
    expect(text).toBe('the archive may be downloaded once per 24 hours; the next download is allowed at 2030-01-02T03:04:05.000Z (rate_limit)');
  });

  it('answers the message of errors that are not the service\'s answer', () => {
    expect(explainError(new TransportError('getchats', new Error('connect ECONNREFUSED'), false))).toBe('getchats: connect ECONNREFUSED');
    expect(explainError(new Error('plain'))).toBe('plain');
  });
});

describe('groupwire api with a parameter the operation does not take', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('exits 2 naming the nearest valid name, and sends nothing', async () => {
    const result = await runCli(['api', 'newchat', '--groupname', 'demo', '--subject', 'typo', '--desc', 'd'], envFor(svc, 'mo'));
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("groupwire: unknown parameter --groupname for newchat (did you mean --group_name?)\nRun 'groupwire api --help' for usage.\n");
    const chats = ok(await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: await loginAs(svc, 'mo') }));
    expect(chats.data.map((chat: { subject: string }) => chat.subject)).not.toContain('typo');
  });

  it('--unchecked sends a name groupwire does not know (a newer service may take it), and the service answers', async () => {
    const result = await runCli(['api', 'getchats', '--group_name', 'demo', '--some_new_flag', 'yes', '--unchecked'], envFor(svc, 'mo'));
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).object).toBe('list');
  });

  it('a service certificate the client does not trust: says which CA setting to give, exit 1', async () => {
    const env = envFor(svc, 'mo');
    delete env.GROUPWIRE_CA_FILE;
    const result = await runCli(['topics', '--group', 'demo'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("the TLS certificate is not trusted: set GROUPWIRE_CA_FILE (or --ca-file) to the service's CA file");
  });

  it('--help after an operation lists the parameters it takes', async () => {
    const result = await runCli(['api', 'getchathistory', '--help'], envFor(svc, 'mo'));
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('\nParameters of getchathistory: --chat_id, --start_msg_num, --limit, --page_token, --sort_field, --sort_dir\n');
  });
});
