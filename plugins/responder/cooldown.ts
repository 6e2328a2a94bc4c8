/** How often a rule may fire, in milliseconds: at all, per user, per chat. */
export interface CooldownSpec {
  rule?: number;
  user?: number;
  chat?: number;
}

/**
 * Cooldowns, kept in memory (a restart forgets them, which only ever allows one answer more). A rule
 * used at time t is cooling down until t + its cooldown, for everyone (`rule`), for that user
 * (`user`) or in that chat (`chat`).
 */
export class Cooldowns {
  private readonly until = new Map<string, number>();
  private readonly noticed = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  private keys(rule: string, spec: CooldownSpec, userId: string, chatId: string): Array<[string, number]> {
    const keys: Array<[string, number]> = [];
    if (spec.rule) keys.push([`${rule}`, spec.rule]);
    if (spec.user) keys.push([`${rule}\u0000u\u0000${userId}`, spec.user]);
    if (spec.chat) keys.push([`${rule}\u0000c\u0000${chatId}`, spec.chat]);
    return keys;
  }

  /** Milliseconds until the rule may fire again for this user in this chat (0: now). */
  remaining(rule: string, spec: CooldownSpec | undefined, userId: string, chatId: string): number {
    if (!spec) return 0;
    const now = this.now();
    let wait = 0;
    for (const [key] of this.keys(rule, spec, userId, chatId)) wait = Math.max(wait, (this.until.get(key) ?? 0) - now);
    return wait;
  }

  /** Notes that the rule fired. */
  hit(rule: string, spec: CooldownSpec | undefined, userId: string, chatId: string): void {
    if (!spec) return;
    const now = this.now();
    for (const [key, ms] of this.keys(rule, spec, userId, chatId)) this.until.set(key, now + ms);
    if (this.until.size > 10_000) for (const [key, until] of this.until) if (until <= now) this.until.delete(key);
  }

  /** True the first time a user is told about this rule's cooldown within `windowMs` (no nagging). */
  noticeDue(rule: string, userId: string, windowMs: number): boolean {
    const key = `${rule}\u0000${userId}`;
    const now = this.now();
    if ((this.noticed.get(key) ?? 0) > now) return false;
    this.noticed.set(key, now + windowMs);
    if (this.noticed.size > 10_000) for (const [k, until] of this.noticed) if (until <= now) this.noticed.delete(k);
    return true;
  }
}
