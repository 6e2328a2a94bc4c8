/**
 * A set of the relay's line ids (SentKeys), each kept as a 60-bit digest in two typed arrays made for
 * `max` ids at once (#32 part 2): 20,000 ids held as strings in a Set took some 3 MB, growing with the
 * lines until the set was full, where this takes 512 KB from the start. An id is the base64url of a
 * SHA-256 (SentKeys.idOf), so its first ten characters are 60 random bits: two ids share a digest once
 * in 2^60 look-ups against a full set, far below anything else that could lose a line.
 *
 * Open addressing with linear probing; a deletion shifts the entries after it back, so no tombstones
 * build up however many ids come and go.
 */
export class IdDigests {
  /** The digest's first 30 bits plus one (0: an empty slot), and the next 30 bits. */
  private high: Uint32Array;
  private low: Uint32Array;
  private mask: number;
  private count = 0;

  constructor(max: number) {
    let slots = 1024;
    while (slots < max * 2) slots *= 2;
    this.high = new Uint32Array(slots);
    this.low = new Uint32Array(slots);
    this.mask = slots - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Slots in the table: made once for `max` ids (it doubles only past three quarters full). */
  get slots(): number {
    return this.high.length;
  }

  has(id: string): boolean {
    return this.slotOf(id) >= 0;
  }

  /** Adds an id; false when it was there. */
  add(id: string): boolean {
    const [high, low] = digestOf(id);
    let slot = low & this.mask;
    for (; this.high[slot] !== 0; slot = (slot + 1) & this.mask) if (this.high[slot] === high && this.low[slot] === low) return false;
    this.high[slot] = high;
    this.low[slot] = low;
    this.count += 1;
    // More than SentKeys keeps (it keeps at most `max`): the table doubles rather than fill up.
    if (this.count * 4 > this.high.length * 3) this.grow();
    return true;
  }

  delete(id: string): void {
    let hole = this.slotOf(id);
    if (hole < 0) return;
    // Backward shift: an entry after the hole moves into it unless its own slot lies between them.
    for (let next = (hole + 1) & this.mask; this.high[next] !== 0; next = (next + 1) & this.mask) {
      const home = this.low[next]! & this.mask;
      const between = hole <= next ? home > hole && home <= next : home > hole || home <= next;
      if (between) continue;
      this.high[hole] = this.high[next]!;
      this.low[hole] = this.low[next]!;
      hole = next;
    }
    this.high[hole] = 0;
    this.low[hole] = 0;
    this.count -= 1;
  }

  private slotOf(id: string): number {
    const [high, low] = digestOf(id);
    for (let slot = low & this.mask; this.high[slot] !== 0; slot = (slot + 1) & this.mask) if (this.high[slot] === high && this.low[slot] === low) return slot;
    return -1;
  }

  private grow(): void {
    const { high, low } = this;
    this.high = new Uint32Array(high.length * 2);
    this.low = new Uint32Array(low.length * 2);
    this.mask = this.high.length - 1;
    this.count = 0;
    for (let slot = 0; slot < high.length; slot += 1) {
      if (high[slot] === 0) continue;
      let to = low[slot]! & this.mask;
      while (this.high[to] !== 0) to = (to + 1) & this.mask;
      this.high[to] = high[slot]!;
      this.low[to] = low[slot]!;
      this.count += 1;
    }
  }
}

/** The id's first ten base64url characters as two 30-bit numbers (the first plus one, so never 0). */
function digestOf(id: string): [number, number] {
  return [bitsOf(id, 0) + 1, bitsOf(id, 5)];
}

/** Five characters from `from`, six bits each (any other character folds to its code's low six bits). */
function bitsOf(id: string, from: number): number {
  let bits = 0;
  for (let i = from; i < from + 5; i += 1) bits = bits * 64 + sixBits(id.charCodeAt(i));
  return bits;
}

function sixBits(code: number): number {
  if (code >= 65 && code <= 90) return code - 65;
  if (code >= 97 && code <= 122) return code - 71;
  if (code >= 48 && code <= 57) return code + 4;
  if (code === 45) return 62;
  if (code === 95) return 63;
  // NaN past the end of a short id: 0.
  return Number.isNaN(code) ? 0 : code & 63;
}
