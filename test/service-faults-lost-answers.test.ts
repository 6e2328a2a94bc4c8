import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { admin, call, loginAs, ok, send, startTestService, type Session, type TestService } from './helpers/service.js';

/**
 * `faults/lose-answers`: the operation runs and its change is stored, but the caller gets no answer
 * (the connection is cut), as when the network fails after the server did the work.
 */
let svc: TestService;
let mo: Session;
let groupId: string;

beforeAll(async () => {
  svc = await startTestService();
  mo = await loginAs(svc, 'mo');
  const subs = mo.user.subscriptions as Array<{ group_name: string; group_id: unknown }>;
  groupId = String(subs.find((s) => s.group_name === 'demo')!.group_id);
});
afterAll(async () => svc.close());

const stats = async () => ok(await send(svc, '/_admin/stats', 'GET', { authorization: `Bearer ${svc.service.adminToken}` }));
const newDraft = (subject: string) =>
  call(svc, 'newdraft', { group_id: groupId, draft_type: 'draft_type_post', subject }, { method: 'POST', auth: mo });
const draftSubjects = async () =>
  (ok(await call(svc, 'getdrafts', { group_id: groupId, limit: 100 }, { auth: mo })).data as Array<{ subject: string }>).map((d) => d.subject);

describe('faults/lose-answers', () => {
  test('the call is carried out, its answer lost; only `count` calls of the named operations; clear ends it', async () => {
    ok(await admin(svc, 'faults/lose-answers', { count: 2, operations: ['newdraft'] }));
    await expect(newDraft('lost one')).rejects.toThrow();
    // Other operations answer as usual while the fault waits for newdraft.
    expect(await draftSubjects()).toContain('lost one');
    await expect(newDraft('lost two')).rejects.toThrow();
    // The count is used up: the third is answered.
    expect(ok(await newDraft('answered three')).subject).toBe('answered three');
    expect(await draftSubjects()).toEqual(expect.arrayContaining(['lost one', 'lost two', 'answered three']));
    expect((await stats()).faults.lost_answers).toBe(2);

    ok(await admin(svc, 'faults/lose-answers', { count: 5, operations: ['newdraft'] }));
    ok(await admin(svc, 'faults/clear'));
    expect(ok(await newDraft('after clear')).subject).toBe('after clear');
    expect((await stats()).faults.lost_answers).toBe(2);
  });

  test('the admin route checks its body', async () => {
    expect((await admin(svc, 'faults/lose-answers', { count: 0 })).status).toBe(400);
  });
});
