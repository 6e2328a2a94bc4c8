/** What /status, /status.json and `groupwire status` show of the workers (docs/scale-out.md). */
export interface CoordinationStatus {
  /** This worker's id. */
  worker: string;
  prefix: string;
  leaseSeconds: number;
  /** Whether this worker reaches Redis now (down: it keeps its units while their leases are provably valid). */
  redisUp: boolean;
  /** The leases this worker holds: the fencing token, since when, and how long each is provably valid. */
  held: Array<{ unit: string; token: string; since: string; validForSeconds: number }>;
  /** Every live worker (read from Redis every 2 s) and the units each holds. */
  workers: Array<{ id: string; pid?: number; host?: string; opsUrl?: string; units: string[] }>;
  /** Every unit of bots.yaml: who holds it (none: between holders), its token, its bots. */
  units: Array<{ unit: string; worker?: string; token?: string; bots: string[] }>;
  counters: { acquired: number; handedOver: number; lost: number; renewFailures: number; redisDown: number };
}
