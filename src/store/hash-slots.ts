/**
 * A multimap of 30-bit hashes (0 to 2^30 - 1) to whole numbers (up to 2^53: the message map's record
 * numbers only go up, and a bridge at 100 lines a second would pass 2^31 in 8 months) in two typed arrays (#32 part 2): the
 * message map's cold records are found through it, relay-irc keeps its sent ids' digests in it. Made for an expected count of entries at once, so it does not
 * grow with the lines until it holds more than three quarters of its slots; a JS Map of the same took
 * some 30 bytes an entry, growing as the map filled. Open addressing with linear probing; a deletion
 * shifts the entries after it back, so no tombstones build up however many come and go. One hash may
 * name several numbers (records sharing a hash, or a lookup two records answer): each pair is an entry.
 */
export class HashSlots {
  /** The hash plus one (0: an empty slot), and the record number. */
  private hashes: Int32Array;
  private numbers: Float64Array;
  private mask: number;
  private count = 0;

  constructor(expected: number) {
    let slots = 1024;
    while (slots < expected * 2) slots *= 2;
    this.hashes = new Int32Array(slots);
    this.numbers = new Float64Array(slots);
    this.mask = slots - 1;
  }

  /** Entries held. */
  get size(): number {
    return this.count;
  }

  /** Slots in the table (it doubles past three quarters full). */
  get slots(): number {
    return this.hashes.length;
  }

  /** The numbers a hash names, newest (highest) first. */
  get(hash: number): number[] {
    const found: number[] = [];
    const tag = hash + 1;
    for (let slot = hash & this.mask; this.hashes[slot] !== 0; slot = (slot + 1) & this.mask) if (this.hashes[slot] === tag) found.push(this.numbers[slot]!);
    return found.length > 1 ? found.sort((a, b) => b - a) : found;
  }

  /** Whether (hash, number) is there. */
  has(hash: number, number: number): boolean {
    const tag = hash + 1;
    for (let slot = hash & this.mask; this.hashes[slot] !== 0; slot = (slot + 1) & this.mask) if (this.hashes[slot] === tag && this.numbers[slot] === number) return true;
    return false;
  }

  /** Adds (hash, number), unless it is there. */
  add(hash: number, number: number): void {
    const tag = hash + 1;
    let slot = hash & this.mask;
    for (; this.hashes[slot] !== 0; slot = (slot + 1) & this.mask) if (this.hashes[slot] === tag && this.numbers[slot] === number) return;
    this.hashes[slot] = tag;
    this.numbers[slot] = number;
    this.count += 1;
    if (this.count * 4 > this.hashes.length * 3) this.grow();
  }

  /** Removes (hash, number); nothing when it is not there. */
  delete(hash: number, number: number): void {
    const tag = hash + 1;
    let hole = hash & this.mask;
    for (; this.hashes[hole] !== 0; hole = (hole + 1) & this.mask) if (this.hashes[hole] === tag && this.numbers[hole] === number) break;
    if (this.hashes[hole] === 0) return;
    // Backward shift: an entry after the hole moves into it unless its home slot lies between them.
    for (let next = (hole + 1) & this.mask; this.hashes[next] !== 0; next = (next + 1) & this.mask) {
      const home = (this.hashes[next]! - 1) & this.mask;
      const between = hole <= next ? home > hole && home <= next : home > hole || home <= next;
      if (between) continue;
      this.hashes[hole] = this.hashes[next]!;
      this.numbers[hole] = this.numbers[next]!;
      hole = next;
    }
    this.hashes[hole] = 0;
    this.count -= 1;
  }

  private grow(): void {
    const { hashes, numbers } = this;
    this.hashes = new Int32Array(hashes.length * 2);
    this.numbers = new Float64Array(numbers.length * 2);
    this.mask = this.hashes.length - 1;
    for (let slot = 0; slot < hashes.length; slot += 1) {
      if (hashes[slot] === 0) continue;
      let to = (hashes[slot]! - 1) & this.mask;
      while (this.hashes[to] !== 0) to = (to + 1) & this.mask;
      this.hashes[to] = hashes[slot]!;
      this.numbers[to] = numbers[slot]!;
    }
  }
}
