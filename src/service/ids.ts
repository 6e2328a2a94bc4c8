import { createHash } from 'node:crypto';

/**
 * How the local service mints identifiers. The spec says ids are opaque strings of up to 255 characters
 * that appear as integers in samples; clients must cope with all three shapes, so the service can mint
 * each of them on demand.
 */
export type IdStyle = 'numeric' | 'big' | 'opaque';

export const ID_STYLES: readonly IdStyle[] = ['numeric', 'big', 'opaque'];

// 2^53 + 1: the first integer a JavaScript number cannot hold. Odd steps keep every id unrepresentable
// as a double, so a client that parses ids as numbers visibly corrupts them.
const BIG_BASE = 9007199254740993n;

// Characters that need URL encoding or look like syntax, so clients that forget to encode get caught.
const OPAQUE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=&%:~.-_';
// Lengths cycle so lists mix short ids with ids at the 255-character maximum.
const OPAQUE_LENGTHS = [24, 255, 61, 255, 137, 32];

export function mintId(style: IdStyle, seq: number): string {
  switch (style) {
    case 'numeric':
      return String(seq);
    case 'big':
      return String(BIG_BASE + BigInt(seq) * 2n);
    case 'opaque':
      return opaqueId(seq);
  }
}

function opaqueId(seq: number): string {
  const length = OPAQUE_LENGTHS[seq % OPAQUE_LENGTHS.length] ?? 64;
  // The sequence number in base 36 keeps ids unique; the hash-derived tail makes them long and varied.
  let id = `g${seq.toString(36)}~`;
  let block = 0;
  while (id.length < length) {
    const digest = createHash('sha256').update(`${seq}:${block++}`).digest();
    for (const byte of digest) {
      if (id.length >= length) break;
      id += OPAQUE_ALPHABET[byte % OPAQUE_ALPHABET.length];
    }
  }
  return id;
}

/**
 * Marks a value that goes on the wire as an identifier. The serializer writes it as a bare JSON integer
 * in the numeric and big styles (every digit kept) and as a JSON string in the opaque style.
 */
export class WireId {
  constructor(readonly value: string) {}
}

export function wireId(value: string): WireId;
export function wireId(value: string | null | undefined): WireId | null;
export function wireId(value: string | null | undefined): WireId | null {
  return value === null || value === undefined ? null : new WireId(value);
}
