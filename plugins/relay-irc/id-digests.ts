import { HashSlots } from '../../src/index.js';

/**
 * A set of the relay's line ids (SentKeys), each kept as a 60-bit digest in a table made for `max` ids
 * at once (#32 part 2): 20,000 ids held as strings in a Set took some 3 MB, growing with the lines
 * until the set was full, where this takes 512 KB from the start. An id is the base64url of a SHA-256
 * (SentKeys.idOf), so its first ten characters are 60 random bits: two ids share a digest once in 2^60
 * look-ups against a full set, far below anything else that could lose a line. The digest's two
 * halves are a HashSlots entry (hash, number).
 */
export class IdDigests {
  private readonly table: HashSlots;

  constructor(max: number) {
    this.table = new HashSlots(max);
  }

  get size(): number {
    return this.table.size;
  }

  /** Slots in the table: made once for `max` ids (it doubles only past three quarters full). */
  get slots(): number {
    return this.table.slots;
  }

  has(id: string): boolean {
    return this.table.has(bitsOf(id, 0), bitsOf(id, 5));
  }

  /** Adds an id; false when it was there. */
  add(id: string): boolean {
    if (this.has(id)) return false;
    this.table.add(bitsOf(id, 0), bitsOf(id, 5));
    return true;
  }

  delete(id: string): void {
    this.table.delete(bitsOf(id, 0), bitsOf(id, 5));
  }
}

/** Five characters from `from`, six bits each: 30 bits (any other character folds to its code's low six bits). */
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
