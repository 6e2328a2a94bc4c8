import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseYaml, ConfigError } from '../src/config/yaml-source.js';
import { seedSchema } from '../src/service/seed.js';
import { admin, call, expectError, loginAs, send, startTestService, type TestService } from './helpers/service.js';

describe('rate limiting', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ rateLimit: { perSecond: 1, burst: 5 } });
  });
  afterAll(async () => svc.close());

  it('answers 429 rate_limit with Retry-After once a caller exceeds the rate, other callers unaffected', async () => {
    const bob = await loginAs(svc, 'bob');
    const results = [];
    for (let i = 0; i < 8; i += 1) results.push(await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob }));
    expect(results.slice(0, 4).every((r) => r.status === 200)).toBe(true);
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expectError(limited[0]!, 'rate_limit');
    expect(Number(limited[0]!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const carol = await loginAs(svc, 'carol');
    expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: carol })).status).toBe(200);
  });

  it('can be changed at run time through the admin API', async () => {
    expect((await admin(svc, 'rate-limit', { api: 'off' })).status).toBe(200);
    const mo = await loginAs(svc, 'mo');
    for (let i = 0; i < 20; i += 1) expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: mo })).status).toBe(200);
    expect((await admin(svc, 'rate-limit', { api: 'fast' })).body).toMatchObject({ object: 'error', type: 'bad_request' });
  });

  it('counts the calls it received per operation, refused ones included, unknown names together', async () => {
    const stats = async () => (await send(svc, '/_admin/stats', 'GET', { authorization: `Bearer ${svc.service.adminToken}` })).body;
    const before = (await stats()).api_calls;
    const dave = await loginAs(svc, 'dave');
    await call(svc, 'getchats', { group_name: 'demo' }, { auth: dave });
    await call(svc, 'getchats', { group_name: 'no-such-group' }, { auth: dave });
    await call(svc, 'no_such_operation_1', {}, { auth: dave });
    await call(svc, 'no_such_operation_2', {}, { auth: dave });
    const after = (await stats()).api_calls;
    expect((after.getchats ?? 0) - (before.getchats ?? 0)).toBe(2);
    expect((after.login ?? 0) - (before.login ?? 0)).toBe(1);
    expect((after['(unknown)'] ?? 0) - (before['(unknown)'] ?? 0)).toBe(2);
    expect(after).not.toHaveProperty('no_such_operation_1');
  });
});

describe('injected faults', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => svc.close());

  it('answers the next N calls with 429 or server, then recovers', async () => {
    const bob = await loginAs(svc, 'bob');
    await admin(svc, 'faults/errors', { count: 2, type: 'rate_limit', retry_after: 3, scope: 'api' });
    const first = await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob });
    expectError(first, 'rate_limit');
    expect(first.headers['retry-after']).toBe('3');
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob }), 'rate_limit');
    expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob })).status).toBe(200);

    await admin(svc, 'faults/errors', { count: 1, type: 'server', operations: ['gettopics'] });
    expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob })).status).toBe(200);
    expectError(await call(svc, 'gettopics', { group_name: 'demo' }, { auth: bob }), 'server');
    expect((await call(svc, 'gettopics', { group_name: 'demo' }, { auth: bob })).status).toBe(200);

    await admin(svc, 'faults/errors', { count: 1, type: 'server', status: 502 });
    const proxy = await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob });
    expect(proxy.status).toBe(502);
    expect(proxy.body.type).toBe('server');
  });

  it('adds latency while told to', async () => {
    const bob = await loginAs(svc, 'bob');
    await admin(svc, 'faults/latency', { ms: 300 });
    expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob })).status).toBe(200);
    await admin(svc, 'faults/clear');
    expect((await call(svc, 'getchats', { group_name: 'demo' }, { auth: bob })).status).toBe(200);
    const stats = await send(svc, '/_admin/stats', 'GET', { authorization: `Bearer ${svc.service.adminToken}` });
    expect(stats.body.faults.delayed).toBe(1);
  });

  it('restarts its listeners keeping the data', async () => {
    const mo = await loginAs(svc, 'mo');
    const made = await call(svc, 'newchat', { group_name: 'demo', subject: 'survives restart', desc: '' }, { method: 'POST', auth: mo });
    expect((await admin(svc, 'restart')).status).toBe(200);
    let after;
    for (let attempt = 0; attempt < 50; attempt += 1) {
      try {
        after = await call(svc, 'getchats', { group_name: 'demo', limit: 100 }, { auth: mo });
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    expect(after?.body.data.map((c: { id: unknown }) => c.id)).toContainEqual(made.body.id);
  });

  it('guards the admin API with the admin token', async () => {
    const denied = await send(svc, '/_admin/faults/expire-sessions', 'POST', { authorization: 'Bearer wrong', 'content-type': 'application/json' }, '{}');
    expect(denied.status).toBe(403);
    const bad = await admin(svc, 'faults/latency', { ms: 'lots' });
    expect(bad.body).toMatchObject({ object: 'error', type: 'bad_request' });
  });
});

describe('state file', () => {
  it('keeps users, chats, messages and sessions across a restart of the service', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-state-'));
    const statePath = join(dir, 'state.json');
    try {
      const first = await startTestService({ statePath, idStyle: 'big' });
      const mo = await loginAs(first, 'mo');
      const chat = await call(first, 'newchat', { group_name: 'demo', subject: 'kept', desc: '' }, { method: 'POST', auth: mo });
      await admin(first, 'chats/messages', { chat: String(chat.body.id), user: 'bob@example.com', message: 'remember me' });
      const caFile = first.service.caFile;
      await first.close();

      const second = await startTestService({ statePath, idStyle: 'numeric' });
      try {
        expect(second.service.idStyle).toBe('big');
        expect(second.service.caFile).toBe(caFile);
        const history = await call(second, 'getchathistory', { chat_id: chat.body.id }, { auth: mo });
        expect(history.status).toBe(200);
        expect(history.body.data[0].message).toBe('remember me');
        // The creator's chat_sub came back too, and is found for its chat.
        const chats = await call(second, 'getchats', { group_name: 'demo', limit: 100 }, { auth: mo });
        const kept = chats.body.data.find((c: { subject: string }) => c.subject === 'kept');
        expect(kept.chat_sub).toMatchObject({ object: 'chat_sub', chat_id: chat.body.id });
      } finally {
        await second.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('seed files', () => {
  it('report mistakes with file, line and column', () => {
    const text = 'users:\n  - email: not-an-address\n    password: x\n    full_name: X\ngroups:\n  - name: g\n    colour: red\n';
    let error: unknown;
    try {
      parseYaml(text, 'seed.yaml', seedSchema);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.some((p) => p.startsWith('seed.yaml:2:12:') && p.includes('users.0.email'))).toBe(true);
    expect(problems.some((p) => p.startsWith('seed.yaml:7:5:') && p.includes('colour'))).toBe(true);
  });

  it('report YAML syntax errors with their place', () => {
    expect(() => parseYaml('users: [\n  - a\n', 'bad.yaml', seedSchema)).toThrow(/^bad\.yaml:\d+:\d+: /);
  });
});

describe('groupwire serve', () => {
  it('prints one JSON line when ready and serves the seed given with --seed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-serve-'));
    const seed = join(dir, 'seed.yaml');
    await writeFile(seed, [
      'users:', '  - { email: zed@example.com, password: zed-pass, full_name: Zed }',
      'groups:', '  - name: tiny', '    members: [{ email: zed@example.com, role: owner }]',
      '    chats: [{ subject: lobby, owner: zed@example.com }]', '',
    ].join('\n'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--seed', seed, '--ids', 'opaque'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
      });
      const ready = JSON.parse(line);
      expect(ready.base_url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(ready.ca_file).toMatch(/ca\.pem$/);
      expect(typeof ready.admin_token).toBe('string');
      const { Agent, request } = await import('undici');
      const { readFile } = await import('node:fs/promises');
      const dispatcher = new Agent({ connect: { ca: await readFile(ready.ca_file, 'utf8') } });
      const login = await request(`${ready.base_url}/api/v1/login`, {
        method: 'POST', dispatcher, headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email=zed%40example.com&password=zed-pass',
      });
      const body = (await login.body.json()) as { user: { id: unknown } };
      expect(typeof body.user.id).toBe('string');
      await dispatcher.close();
    } finally {
      child.kill('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 with a clear message on a usage mistake', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--ids', 'roman'], (error, _stdout, stderr) => {
        resolve({ code: error ? (error as { code?: number }).code ?? 1 : 0, stderr });
      });
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--ids must be one of numeric, big, opaque');
  });
});

describe('admin-made changes in the activity log', () => {
  it('records a member made moderator as moderator_added, in the mod family', async () => {
    const svc = await startTestService();
    try {
      await admin(svc, 'subscriptions', { group: 'demo', user: 'carol@example.com', role: 'moderator' });
      const alice = await loginAs(svc, 'alice');
      const mod = await call(svc, 'getactivitylog', { group_name: 'demo', filter_by: 'mod', action: 'moderator_added' }, { auth: alice });
      expect(mod.body.data).toHaveLength(1);
      expect(mod.body.data[0].entry).toContain('Carol Member');
      expect(mod.body.data[0].entry).toContain('was made a moderator');
    } finally {
      await svc.close();
    }
  });
});

describe('admin groups', () => {
  it('creates a group naming existing users, and leaves nothing behind when a name is unknown', async () => {
    const svc = await startTestService();
    try {
      const bad = await admin(svc, 'groups', { name: 'g3', members: [{ email: 'nobody@example.com', role: 'owner' }] });
      expect(bad.body).toMatchObject({ object: 'error', type: 'bad_request' });
      expect(bad.body.extra).toContain('nobody@example.com');
      const good = await admin(svc, 'groups', {
        name: 'g3', members: [{ email: 'bob@example.com', role: 'owner' }], chats: [{ subject: 'hall', owner: 'bob@example.com' }],
      });
      expect(good.body).toMatchObject({ object: 'group', name: 'g3' });
      const bob = await loginAs(svc, 'bob');
      const chats = await call(svc, 'getchats', { group_name: 'g3' }, { auth: bob });
      expect(chats.body.data.map((c: { subject: string }) => c.subject)).toEqual(['hall']);
    } finally {
      await svc.close();
    }
  });
});
