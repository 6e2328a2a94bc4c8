import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { hashPassword } from './auth.js';
import type { ChatHub } from './chat-hub.js';
import { postChatMessage } from './chat-messages.js';
import type { ServiceCore } from './core.js';
import { wireId } from './ids.js';
import { toWireJson } from './json.js';
import type { Chat, Group, User } from './model.js';
import { PERM_FLAGS } from './perms.js';
import { parseRateLimit } from './rate-limit.js';
import { appendMessage, hashtagIdsFor, hashtagNames, startTopic } from './posting.js';
import { applySeed, SeedError, seedSchema } from './seed.js';

export interface AdminHooks {
  restart(): Promise<void>;
}

class AdminError extends Error {}

const ref = z.string().min(1);
const schemas = {
  user: z.object({
    email: z.email(), password: z.string().min(1), full_name: z.string().min(1), user_name: z.string().optional(),
    timezone: z.string().default('UTC'), two_factor_secret: z.string().optional(),
  }),
  subscription: z.object({
    group: ref, user: ref, role: z.enum(['owner', 'moderator', 'member', 'banned']).default('member'),
    grants: z.array(z.enum(PERM_FLAGS)).default([]),
  }),
  unsubscribe: z.object({ group: ref, user: ref }),
  topic: z.object({ group: ref, user: ref, subject: z.string().min(1), body: z.string(), html: z.boolean().default(false), hashtags: z.array(z.string()).default([]) }),
  reply: z.object({ topic: ref, user: ref, body: z.string(), html: z.boolean().default(false) }),
  chat: z.object({ group: ref, owner: ref, subject: z.string().min(1), desc: z.string().default(''), members: z.array(ref).default([]) }),
  chatPost: z.object({
    chat: ref, group: ref.optional(), user: ref, message: z.string().min(1), count: z.number().int().min(1).max(1_000_000).default(1),
  }),
  token: z.object({ user: ref }),
  dropSockets: z.object({ chat: ref.optional(), group: ref.optional() }),
  refuseUpgrades: z.object({ seconds: z.number().positive(), status: z.number().int().min(400).max(599).default(503) }),
  errors: z.object({
    count: z.number().int().min(1), type: z.enum(['rate_limit', 'server']), status: z.number().int().min(400).max(599).optional(),
    retry_after: z.number().min(0).default(1), scope: z.enum(['api', 'upgrade', 'all']).default('all'),
    operations: z.array(z.string()).default([]),
  }),
  loseAnswers: z.object({ count: z.number().int().min(1), operations: z.array(z.string().min(1)).default([]) }),
  latency: z.object({ ms: z.number().int().min(0), seconds: z.number().positive().optional() }),
  // Forward only: a clock moved back would leave recorded times in the future.
  clock: z.object({ seconds: z.number().min(0) }),
  rateLimit: z.object({ api: z.string().optional(), upgrade: z.string().optional() }),
};

/**
 * The admin API for tests and demos (not part of the spec; docs/local-service.md). Loopback callers
 * with the admin token only.
 */
export function mountAdmin(app: FastifyInstance, core: ServiceCore, hub: ChatHub, adminToken: string, hooks: AdminHooks): void {
  const store = core.store;
  const userOf = (key: string): User => {
    const user = store.users.get(key) ?? store.usersByEmail.get(key.toLowerCase());
    if (!user) throw new AdminError(`no user ${key}`);
    return user;
  };
  const groupOf = (key: string): Group => {
    const group = store.groups.get(key) ?? store.groupsByName.get(key.toLowerCase());
    if (!group) throw new AdminError(`no group ${key}`);
    return group;
  };
  const chatOf = (key: string, groupKey?: string): Chat => {
    const byId = store.chats.get(key);
    if (byId) return byId;
    const group = groupKey ? groupOf(groupKey) : undefined;
    const chat = [...store.chats.values()].find((c) => c.subject === key && (!group || c.groupId === group.id));
    if (!chat) throw new AdminError(`no chat ${key}`);
    return chat;
  };

  const route = <S extends z.ZodType>(path: string, schema: S, handler: (body: z.infer<S>) => unknown) => {
    app.post(`/_admin/${path}`, async (request, reply) => {
      if (!authorized(request, adminToken)) {
        return reply.code(403).send({ object: 'error', type: 'authentication', extra: 'admin API: loopback and admin token only' });
      }
      const parsed = schema.safeParse(request.body ?? {});
      if (!parsed.success) return sendAdminError(reply, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      try {
        const result = await handler(parsed.data);
        reply.header('content-type', 'application/json; charset=utf-8');
        return reply.send(toWireJson(result ?? { object: 'success', extra: '' }, store.idStyle));
      } catch (error) {
        if (error instanceof AdminError || error instanceof SeedError || error instanceof z.ZodError) return sendAdminError(reply, error.message);
        throw error;
      }
    });
  };

  app.get('/_admin/stats', async (request, reply) => {
    if (!authorized(request, adminToken)) return reply.code(403).send({ object: 'error', type: 'authentication', extra: '' });
    return {
      open_sockets: hub.openSockets,
      sockets: hub.stats,
      faults: core.faults.applied,
      rate_limited: { api: core.limiter.refused, upgrades: core.upgradeLimiter.refused },
      api_calls: Object.fromEntries(core.apiCalls),
      clock_offset_ms: core.clock.offset,
    };
  });

  route('seed', seedSchema, (seed) => {
    applySeed(store, core.clock, seed);
  });
  route('users', schemas.user, (b) => {
    if (store.usersByEmail.has(b.email.toLowerCase())) throw new AdminError(`user ${b.email} exists`);
    const now = core.now();
    const user = store.addUser({
      email: b.email, passwordHash: hashPassword(b.password), fullName: b.full_name, userName: b.user_name ?? b.email.split('@')[0]!,
      timezone: b.timezone, twoFactorSecret: b.two_factor_secret, created: now, updated: now, aboutMe: '', location: '',
      website: '', profilePrivacy: 'profile_members',
    });
    return { object: 'user', id: wireId(user.id), email: user.email };
  });
  route('groups', seedSchema.shape.groups.unwrap().element, (g) => {
    if (store.groupsByName.has(g.name.toLowerCase())) throw new AdminError(`group ${g.name} exists`);
    applySeed(store, core.clock, { groups: [g] });
    return core.present.group(groupOf(g.name), undefined);
  });
  route('subscriptions', schemas.subscription, (b) => {
    const user = userOf(b.user);
    const group = groupOf(b.group);
    const existing = store.subscriptionOf(user.id, group.id);
    const now = core.now();
    const sub = existing ?? store.addSubscription({
      userId: user.id, groupId: group.id, role: b.role, grants: b.grants, created: now, updated: now, signature: '',
      moderatorNotes: '', approvedPosts: 0,
    });
    Object.assign(sub, { role: b.role, grants: b.grants, updated: now });
    store.touch();
    const [action, text] = b.role === 'banned' ? ['member_banned', 'was banned'] as const
      : b.role === 'moderator' ? ['moderator_added', 'was made a moderator'] as const
      : existing ? ['member_joined', 'had the subscription changed'] as const
      : ['member_joined', 'joined the group'] as const;
    core.activity.record(group, action, user, text, { sub, via: 'via_web' });
    if (b.role === 'banned') core.events.emit('member-lost', group.id, user.id);
    return core.present.subscription(sub, true);
  });
  route('subscriptions/remove', schemas.unsubscribe, (b) => {
    const user = userOf(b.user);
    const group = groupOf(b.group);
    const sub = store.subscriptionOf(user.id, group.id);
    if (!sub) throw new AdminError(`${b.user} is not a member of ${b.group}`);
    sub.removed = core.now();
    store.touch();
    core.activity.record(group, 'member_left', user, 'left the group', { sub, via: 'via_web' });
    core.events.emit('member-lost', group.id, user.id);
    return core.present.subscription(sub, true);
  });
  route('topics', schemas.topic, (b) => {
    const group = groupOf(b.group);
    const user = userOf(b.user);
    const hashtagIds = hashtagIdsFor(core, group, [...b.hashtags, ...hashtagNames(b.subject)]);
    const { topic, message } = startTopic(core, group, user, { subject: b.subject, body: b.body, isPlainText: !b.html, hashtagIds });
    core.activity.record(group, 'topic_created', user, `started the topic "${b.subject}"`, { via: 'via_web' });
    return { topic: core.present.topic(topic), message: core.present.message(message) };
  });
  route('messages', schemas.reply, (b) => {
    const topic = store.topics.get(b.topic);
    if (!topic) throw new AdminError(`no topic ${b.topic}`);
    const user = userOf(b.user);
    const message = appendMessage(core, topic, user, { subject: `Re: ${topic.subject}`, body: b.body, isPlainText: !b.html, isReply: true });
    const group = store.groups.get(topic.groupId)!;
    core.activity.record(group, 'message_posted', user, `replied to "${topic.subject}"`, { via: 'via_web' });
    return core.present.message(message);
  });
  route('chats', schemas.chat, (b) => {
    const group = groupOf(b.group);
    const owner = userOf(b.owner);
    const now = core.now();
    const chat = store.addChat({ groupId: group.id, userId: owner.id, subject: b.subject, desc: b.desc, isClosed: false, created: now, updated: now });
    for (const member of new Set([owner.id, ...b.members.map((m) => userOf(m).id)])) {
      store.addChatSub({ chatId: chat.id, groupId: group.id, userId: member, lastMsgSeen: 0, created: now, updated: now });
    }
    return core.present.chat(chat, owner.id);
  });
  route('chats/messages', schemas.chatPost, (b) => {
    const chat = chatOf(b.chat, b.group);
    if (chat.isClosed) throw new AdminError('closed chat');
    const user = userOf(b.user);
    let last;
    for (let n = 1; n <= b.count; n += 1) {
      last = postChatMessage(core, chat, user, b.count > 1 ? b.message.replaceAll('{n}', String(n)) : b.message);
    }
    return core.present.chatMessage(last!);
  });
  route('tokens', schemas.token, (b) => {
    const session = core.auth.openSession(userOf(b.user), true);
    return { token: session.token, csrf: session.csrf, cookie: `groupsio=${session.cookie}`, user_id: wireId(session.userId) };
  });
  route('faults/drop-sockets', schemas.dropSockets, (b) => ({
    dropped: hub.dropSockets(b.chat ? { chatId: chatOf(b.chat, b.group).id } : b.group ? { groupId: groupOf(b.group).id } : {}),
  }));
  route('faults/refuse-upgrades', schemas.refuseUpgrades, (b) => core.faults.refuseUpgrades(b.seconds, b.status));
  route('faults/errors', schemas.errors, (b) => core.faults.answerErrors({
    count: b.count, type: b.type, status: b.status ?? (b.type === 'rate_limit' ? 429 : 400), retryAfter: b.retry_after,
    scope: b.scope, operations: b.operations,
  }));
  route('faults/lose-answers', schemas.loseAnswers, (b) => core.faults.loseAnswers(b.count, b.operations));
  route('faults/expire-sessions', z.object({}), () => ({ expired: core.auth.expireAll() }));
  route('faults/latency', schemas.latency, (b) => core.faults.setLatency(b.ms, b.seconds));
  route('faults/clear', z.object({}), () => core.faults.clear());
  route('clock/advance', schemas.clock, (b) => {
    core.clock.advance(b.seconds * 1000);
    return { clock_offset_ms: core.clock.offset, now: new Date(core.now()).toISOString() };
  });
  route('rate-limit', schemas.rateLimit, (b) => {
    try {
      if (b.api !== undefined) core.limiter.config = parseRateLimit(b.api);
      if (b.upgrade !== undefined) core.upgradeLimiter.config = parseRateLimit(b.upgrade);
    } catch (error) {
      throw new AdminError((error as Error).message);
    }
  });
  route('restart', z.object({}), () => hooks.restart());
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

function authorized(request: FastifyRequest, adminToken: string): boolean {
  if (!LOOPBACK.test(request.socket.remoteAddress ?? '')) return false;
  const given = Buffer.from((request.headers.authorization ?? '').replace(/^Bearer\s+/i, ''));
  const expected = Buffer.from(adminToken);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function sendAdminError(reply: FastifyReply, extra: string) {
  return reply.code(400).send({ object: 'error', type: 'bad_request', extra });
}
