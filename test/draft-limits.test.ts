import { FormData } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, expectError, loginAs, ok, startTestService, type ApiResponse, type Session, type TestService } from './helpers/service.js';

/**
 * A draft's attachments are bounded in total (#15 item 9, docs/protocol.md "Drafts"): at most 20 files
 * and 25 MiB together, however many addattachments calls bring them; a call that would pass either
 * bound is refused whole and stores nothing. The same class: a user's drafts are bounded in number.
 */

const MAX_FILES = 20;
const MAX_DRAFTS = 50;
const MiB = 1024 * 1024;

describe('the attachments of a draft, in total', () => {
  let svc: TestService;
  let bob: Session;

  beforeAll(async () => {
    svc = await startTestService();
    bob = await loginAs(svc, 'bob');
  });
  afterAll(async () => svc?.close());

  async function newDraft(): Promise<string> {
    const draft = ok(await call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' }, { method: 'POST', auth: bob }));
    return String(draft.id);
  }

  async function upload(draftId: string, sizes: number[]): Promise<ApiResponse> {
    const form = new FormData();
    form.append('draft_id', draftId);
    form.append('csrf', bob.csrf);
    sizes.forEach((size, n) => form.append('file', new Blob([Buffer.alloc(size, 97)], { type: 'text/plain' }), `f${n}.txt`));
    return call(svc, 'addattachments', {}, { auth: bob, method: 'POST', csrf: false, body: form as never });
  }

  async function stored(draftId: string): Promise<any> {
    return ok(await call(svc, 'getdrafts', { limit: 100 }, { auth: bob })).data.find((d: any) => String(d.id) === draftId);
  }

  it(`takes ${MAX_FILES} files over several calls, and refuses the one more without storing it`, async () => {
    const id = await newDraft();
    ok(await upload(id, Array(10).fill(10)));
    ok(await upload(id, Array(10).fill(10)));
    expectError(await upload(id, [10]), 'bad_request', 'too many attachments');
    expect(await stored(id)).toMatchObject({ num_attachments: MAX_FILES, next_attachment_id: MAX_FILES + 1 });
  });

  it('refuses a call that would pass the count as a whole: none of its files is stored', async () => {
    const id = await newDraft();
    ok(await upload(id, Array(10).fill(10)));
    ok(await upload(id, Array(5).fill(10)));
    expectError(await upload(id, Array(6).fill(10)), 'bad_request', 'too many attachments');
    expect(await stored(id)).toMatchObject({ num_attachments: 15, next_attachment_id: 16 });
    ok(await upload(id, Array(5).fill(10)));
  });

  it('refuses files that would bring the total past 25 MiB, and stores nothing of that call', async () => {
    const id = await newDraft();
    ok(await upload(id, [9 * MiB]));
    ok(await upload(id, [9 * MiB, 1]));
    expectError(await upload(id, [1, 7 * MiB]), 'bad_request', 'attachments too large');
    expect(await stored(id)).toMatchObject({ num_attachments: 3, next_attachment_id: 4 });
    ok(await upload(id, [7 * MiB - 1]));
  });

  it(`keeps at most ${MAX_DRAFTS} drafts per user; the next newdraft is refused until one goes`, async () => {
    const carol = await loginAs(svc, 'carol');
    const create = () => call(svc, 'newdraft', { group_name: 'demo', draft_type: 'draft_type_post' }, { method: 'POST', auth: carol });
    const ids: string[] = [];
    for (let n = 0; n < MAX_DRAFTS; n += 1) ids.push(String(ok(await create()).id));
    expectError(await create(), 'bad_request', 'too many drafts');
    expect(ok(await call(svc, 'getdrafts', { limit: 100 }, { auth: carol })).total_count).toBe(MAX_DRAFTS);
    expect((await call(svc, 'deletedraft', { draft_id: ids[0] }, { method: 'POST', auth: carol })).status).toBe(200);
    ok(await create());
  });
});
