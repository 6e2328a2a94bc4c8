import { EventEmitter } from 'eventemitter3';
import { ActivityRecorder } from './activity.js';
import { Auth, type Caller } from './auth.js';
import { Clock } from './clock.js';
import { badRequest, noPermission } from './errors.js';
import { Faults } from './faults.js';
import { LoginLimits } from './login-limits.js';
import type { Chat, ChatMessage, ChatSub, Group, Subscription } from './model.js';
import { Pager } from './paging.js';
import type { Params } from './params.js';
import { computePerms, seesGroup, type PermFlag, type Perms } from './perms.js';
import { Presenter } from './present.js';
import { RateLimiter, type RateLimitConfig } from './rate-limit.js';
import type { Store } from './store.js';

/** A group named by a call, with the caller's standing in it. */
export interface GroupScope {
  group: Group;
  sub: Subscription | undefined;
  perms: Perms;
}

/** What happens to chats, for the chat hub to carry to the open sockets. */
export interface ServiceEvents {
  'chat-message': (message: ChatMessage, chat: Chat) => void;
  'chat-closed': (chat: Chat) => void;
  'chat-deleted': (chat: Chat) => void;
  'chat-sub-removed': (sub: ChatSub) => void;
  /** A member was banned or removed from a group. */
  'member-lost': (groupId: string, userId: string) => void;
}

export interface CoreOptions {
  rateLimit: RateLimitConfig | null;
  upgradeRateLimit: RateLimitConfig | null;
  sessionTtlMs?: number;
}

/**
 * The service's state and the helpers every operation shares. It knows nothing of HTTP; the server
 * (server.ts) and the chat hub (chat-hub.ts) sit on top of it.
 */
export class ServiceCore {
  readonly clock = new Clock();
  readonly auth: Auth;
  readonly pager: Pager;
  readonly present: Presenter;
  readonly faults: Faults;
  readonly activity: ActivityRecorder;
  readonly limiter: RateLimiter;
  readonly upgradeLimiter: RateLimiter;
  /** Login attempts per address and failed logins per account (docs/protocol.md "Rate limits"). */
  readonly loginLimits: LoginLimits;
  readonly events = new EventEmitter<ServiceEvents>();
  /** API calls received per operation (refused ones included), for /_admin/stats: benches count a client's calls. */
  readonly apiCalls = new Map<string, number>();
  baseUrl = '';

  constructor(
    readonly store: Store,
    options: CoreOptions,
  ) {
    this.loginLimits = new LoginLimits(this.clock);
    this.auth = new Auth(store, this.clock, this.loginLimits, options.sessionTtlMs);
    this.pager = new Pager(this.clock, store.idStyle);
    this.present = new Presenter(store, () => this.baseUrl);
    this.faults = new Faults(this.clock);
    this.activity = new ActivityRecorder(store, this.clock);
    this.limiter = new RateLimiter(this.clock, options.rateLimit);
    this.upgradeLimiter = new RateLimiter(this.clock, options.upgradeRateLimit);
  }

  now(): number {
    return this.clock.now();
  }

  /**
   * The group a call names by exactly one of group_id / group_name (spec 1.6). Neither, both, or an
   * unknown one is `bad_request` naming the parameter.
   */
  groupScope(params: Params, caller: Caller): GroupScope {
    const id = params.string('group_id') || undefined;
    const name = params.string('group_name');
    if (id !== undefined && name) throw badRequest('give one of group_id and group_name, not both');
    // An id over 255 characters cannot exist: simply an unknown group.
    let group: Group | undefined;
    if (id !== undefined) {
      group = this.store.groups.get(id);
      if (!group) throw badRequest('invalid group_id');
    } else if (name) {
      group = this.store.groupsByName.get(name.toLowerCase());
      if (!group) throw badRequest('invalid group_name');
    } else throw badRequest('invalid group_id');
    const scope = this.scopeOf(group, caller);
    // A group the caller may not see answers exactly as one that does not exist (docs/protocol.md).
    if (!seesGroup(group, scope.sub)) throw badRequest(id !== undefined ? 'invalid group_id' : 'invalid group_name');
    return scope;
  }

  scopeOf(group: Group, caller: Caller): GroupScope {
    const sub = this.store.subscriptionOf(caller.user.id, group.id);
    return { group, sub, perms: computePerms(group, sub) };
  }

  require(scope: GroupScope, flag: PermFlag): void {
    if (!scope.perms[flag]) throw noPermission(flag);
  }

  /** The spec's "caller subscribed to the group": a live subscription that is not banned. */
  requireMember(scope: GroupScope): Subscription {
    if (!scope.sub || scope.sub.role === 'banned') throw noPermission('subscribed to the group');
    return scope.sub;
  }
}
