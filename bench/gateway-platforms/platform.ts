import type { Marks, Point } from '../gateway-latency/marks.js';

/**
 * A platform in the gateway platforms bench (bench/gateway-platforms.ts): its server or local fake, the
 * relay's entry in bots.yaml, its endpoint in the gateway, the observer that stamps each line as the
 * platform takes it, how a person there says a line, and what its bare client
 * (bench/lib/bare-platform-client.ts) needs to post there and to listen there.
 */
export interface BenchPlatform {
  readonly point: Exclude<Point, 'sent' | 'chat' | 'slack'>;
  /** How the relay's posts are made there, for the table (e.g. "webhook execute"). */
  readonly how: string;
  plugin(): { use: string; with: Record<string, unknown> };
  endpoint(): Record<string, string>;
  /** Stamps `marks` at this platform's point as it takes each post (relay's or bare client's). */
  watch(marks: Marks): void;
  /** A person on the platform says `text` (the platform → chat hop), to the bot (`gateway`) or to the bare client (`bare`). */
  say(text: string, to: 'gateway' | 'bare'): void | Promise<void>;
  /** The bare client's settings (JSON), read by bench/gateway-platforms/bare-<point>.ts. */
  bareSettings(): Promise<Record<string, unknown>>;
  /** What its fake holds for the clients that came and went (sessions, queues, events kept): read before and after each setup, to see each round measured alike. */
  held?(): Record<string, number>;
  close(): Promise<void>;
}
