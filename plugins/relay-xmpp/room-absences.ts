/** The first wait before a room that refused the relay is tried again; it doubles up to REJOIN_MAX_MS. */
export const REJOIN_BASE_MS = 1_000;
export const REJOIN_MAX_MS = 60_000;

/** Why a room does not have the relay now: a stanza error's condition, `kicked`, `destroyed`, `joining`, ... */
interface Absence {
  condition: string;
  since: number;
  /** Refusals in a row (the backoff's exponent). */
  refusals: number;
  nextTryAt?: number;
  timer?: NodeJS.Timeout;
}

/**
 * The relay's rooms it is not in (yet): being joined and read, refused (locked, no such room yet, the
 * MUC service down, kicked, the room destroyed), each tried again after a wait that doubles from 1 s
 * to 60 s, with jitter (half the wait is random, so rooms and bots refused together do not come back
 * together). A room refused forever is still tried at the cap: an owner may let the relay in later.
 * What `/status` and `/readyz` show (the relay is down while one is missing) and `/metrics` counts.
 */
export class RoomAbsences {
  private readonly absent = new Map<string, Absence>();
  /** Joins refused or failed, and times the relay was put out of a room, since the start. */
  refusals = 0;

  constructor(
    private readonly tryAgain: (room: string) => void,
    private readonly random: () => number = Math.random,
  ) {}

  get size(): number {
    return this.absent.size;
  }

  /** The rooms missing now. */
  rooms(): string[] {
    return [...this.absent.keys()];
  }

  /** The room is being joined (a new session, a rejoin): missing until it is joined and read. */
  joining(room: string): void {
    const absence = this.absent.get(room);
    if (absence) {
      clearTimeout(absence.timer);
      delete absence.timer;
      delete absence.nextTryAt;
      return;
    }
    this.absent.set(room, { condition: 'joining', since: Date.now(), refusals: 0 });
  }

  /** The room refused the relay or put it out: it is tried again after the next wait. Answers the wait, in ms. */
  refused(room: string, condition: string): number {
    this.refusals += 1;
    const absence = this.absent.get(room) ?? { condition, since: Date.now(), refusals: 0 };
    clearTimeout(absence.timer);
    const ceiling = Math.min(REJOIN_MAX_MS, REJOIN_BASE_MS * 2 ** Math.min(absence.refusals, 30));
    const waitMs = Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
    absence.condition = condition;
    absence.refusals += 1;
    absence.nextTryAt = Date.now() + waitMs;
    absence.timer = setTimeout(() => {
      delete absence.timer;
      this.tryAgain(room);
    }, waitMs);
    absence.timer.unref();
    this.absent.set(room, absence);
    return waitMs;
  }

  /** The room was joined and read: lines go to it again. */
  joined(room: string): void {
    clearTimeout(this.absent.get(room)?.timer);
    this.absent.delete(room);
  }

  /** The stream dropped or the relay stops: nothing is tried until a new session joins every room. */
  pause(): void {
    for (const absence of this.absent.values()) {
      clearTimeout(absence.timer);
      delete absence.timer;
      delete absence.nextTryAt;
    }
  }

  /** One line for `/status`: the rooms missing, why, for how long and when they are tried next. */
  describe(total: number, now = Date.now()): string {
    const rooms = [...this.absent].map(([room, absence]) => {
      const next = absence.nextTryAt === undefined ? '' : `, next try in ${Math.max(0, Math.ceil((absence.nextTryAt - now) / 1000))} s`;
      return `${room} (${absence.condition} for ${Math.round((now - absence.since) / 1000)} s${next})`;
    });
    return `not in ${this.absent.size} of ${total} rooms: ${rooms.join(', ')}`;
  }
}
