import { describe, expect, it } from 'vitest';
import type { Group, GroupSettings, Subscription } from '../src/service/model.js';
import { computePerms } from '../src/service/perms.js';
import { afterAll, beforeAll } from 'vitest';
import { call, expectError, loginAs, startTestService, type TestService } from './helpers/service.js';

const settings: GroupSettings = {
  privacy: 'group_privacy_archives', membersVisible: 'group_view_members_subscribers', chatAccess: 'group_access_members',
  allowDownloads: 'allow_downloads_by_members', hashTagPermissions: 'hash_tag_create_mods_bounce', announce: false, locked: false,
  restricted: false,
};
const group = (overrides: Partial<GroupSettings> = {}): Group => ({
  id: 'g', seq: 1, name: 'g', title: 'G', desc: '', subjectTag: 'g', defaultTimezone: 'UTC', settings: { ...settings, ...overrides },
  created: 0, updated: 0,
});
const sub = (role: Subscription['role'], grants: string[] = []): Subscription => ({
  id: 's', seq: 2, userId: 'u', groupId: 'g', role, grants, created: 0, updated: 0, signature: '', moderatorNotes: '', approvedPosts: 0,
});

describe('permissions from standing and settings', () => {
  it('gives the owner everything a moderator has, plus the owner-only flags', () => {
    const owner = computePerms(group(), sub('owner'));
    const moderator = computePerms(group(), sub('moderator'));
    for (const flag of ['delete_group', 'manage_group_billing', 'make_moderator'] as const) {
      expect(owner[flag]).toBe(true);
      expect(moderator[flag]).toBe(false);
    }
    for (const flag of ['manage_chats', 'view_activity', 'ban_members', 'mod_page', 'chat_visible', 'can_post'] as const) {
      expect(owner[flag]).toBe(true);
      expect(moderator[flag]).toBe(true);
    }
  });

  it('lets a member see and post but not manage; a grant adds one flag', () => {
    const member = computePerms(group(), sub('member'));
    expect(member).toMatchObject({ archives_visible: true, chat_visible: true, can_post: true, sub_page: true, download_archives: true });
    expect(member).toMatchObject({ manage_chats: false, view_activity: false, mod_page: false, create_hashtags: false });
    expect(computePerms(group(), sub('member', ['manage_chats'])).manage_chats).toBe(true);
  });

  it('leaves a banned member and a non-member only the public page of a private group', () => {
    for (const standing of [computePerms(group(), sub('banned', ['manage_chats'])), computePerms(group(), undefined)]) {
      const granted = Object.entries(standing).filter(([, value]) => value).map(([flag]) => flag);
      expect(granted).toEqual(['public_page']);
    }
  });

  it('follows the group settings', () => {
    expect(computePerms(group({ privacy: 'group_privacy_none' }), undefined).archives_visible).toBe(true);
    expect(computePerms(group({ chatAccess: 'group_access_limited' }), sub('member')).chat_visible).toBe(false);
    expect(computePerms(group({ chatAccess: 'group_access_none' }), sub('owner')).manage_chats).toBe(false);
    expect(computePerms(group({ allowDownloads: 'allow_downloads_by_moderators' }), sub('member')).download_archives).toBe(false);
    expect(computePerms(group({ announce: true }), sub('member')).can_post).toBe(false);
    expect(computePerms(group({ announce: true }), sub('moderator')).can_post).toBe(true);
    expect(computePerms(group({ locked: true }), sub('owner')).can_post).toBe(false);
    expect(computePerms(group({ hashTagPermissions: 'hash_tag_create_anyone' }), sub('member')).create_hashtags).toBe(true);
    expect(computePerms(group({ membersVisible: 'group_view_members_moderators' }), sub('member')).members_visible).toBe(false);
  });
});

describe('perms on the wire', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => svc.close());

  it('returns the perms object on the group and on each member_info', async () => {
    const mo = await loginAs(svc, 'mo');
    const topics = await call(svc, 'gettopics', { group_name: 'demo' }, { auth: mo });
    expect(topics.body.group.perms).toMatchObject({ object: 'perms', manage_chats: true, delete_group: false });
    expect(topics.body.group_perms).toEqual(topics.body.group.perms);
    expect(topics.body.sub_data[0]).toMatchObject({ object: 'member_info', email: 'mo@example.com', perms: { object: 'perms', view_activity: true } });
  });

  it('refuses a banned member with inadequate_permissions', async () => {
    const dave = await loginAs(svc, 'dave');
    expectError(await call(svc, 'gettopics', { group_name: 'demo' }, { auth: dave }), 'inadequate_permissions', 'archives_visible');
    expectError(await call(svc, 'getchats', { group_name: 'demo' }, { auth: dave }), 'inadequate_permissions', 'chat_visible');
  });
});
