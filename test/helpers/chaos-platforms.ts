import type { PostGate } from './chaos.js';
import type { Line, Side } from './chaos-gateway.js';

/**
 * A platform's side in the gateway chaos run (test/chaos-gateway*.test.ts): how its people talk, what
 * the relay posted there, how the platform cuts the relay's connection, and where its people must keep
 * quiet around a fault because the platform itself could not do better (each says why). Slack's is in
 * chaos-slack-side.ts, Discord's in chaos-discord-side.ts, and so on.
 */
export interface PlatformSide {
  readonly side: Side;
  readonly people: readonly string[];
  /** The relay's entry in bots.yaml (its channels named only by the gateway). */
  plugin(): { use: string; with: Record<string, unknown> };
  /** The platform's endpoint in bots.yaml's `gateways:` (`{ slack: 'C0GENERAL1' }`). */
  endpoint(): Record<string, string>;
  /**
   * How many of the relay's lines may be in flight when the bot is killed, on a platform that has no
   * idempotency key and no history a bot can read back (Telegram): those may arrive twice, the first
   * copy just before the kill, the second just after. Absent: none may.
   */
  readonly sendsAgainAfterKill?: number;
  /** Resolves once the relay is connected to the platform (after the bot's start). */
  connected(): Promise<void>;
  say(who: string, text: string): void | Promise<void>;
  /** What the relay posted there, in order, as the platform's people read it (unescaped). */
  received(): string[] | Promise<string[]>;
  /** Its people's lines (of `sent`, what they said), in the order the platform has them. */
  origin(sent: Line[]): Line[] | Promise<Line[]>;
  /** The platform cuts the relay's connection, its own way (`variant` picks one); `gate` is the side's. Answers what was done. */
  cut(variant: number, gate: PostGate): Promise<string>;
  /** The bot is about to be killed; `gate` is closed. Resolves when the side's people may talk again (at the latest, after `killed`). */
  beforeKill(): Promise<void>;
  /** The bot was killed: resolves when the side's people may talk again. */
  killed(): Promise<void>;
  close(): unknown;
}
