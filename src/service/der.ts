/**
 * The few DER encodings (ITU-T X.690, Distinguished Encoding Rules) that x509.ts needs to write the
 * local service's certificates: an encoder only, written for that job. Every value is a complete TLV
 * (tag, length, value) as a Buffer; constructed values take the encodings of their parts.
 */

/** X.690 §8.1.3: the length octets, short form below 128, otherwise long form (0x80 | count, big-endian). */
function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const octets: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) octets.unshift(rest % 256);
  return Buffer.from([0x80 | octets.length, ...octets]);
}

/** One TLV with a one-octet tag (every tag here is below 31, so no high-tag-number form is needed). */
export function tlv(tag: number, value: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(value.length), value]);
}

export const sequence = (...parts: Buffer[]): Buffer => tlv(0x30, Buffer.concat(parts));

/** A SET OF: DER sorts its members by their encodings (X.690 §11.6). */
export const set = (...parts: Buffer[]): Buffer => tlv(0x31, Buffer.concat([...parts].sort(Buffer.compare)));

export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));

/**
 * An INTEGER from its unsigned big-endian octets (a serial number, a version): leading zero octets
 * are dropped and one 0x00 put back when the top bit is set, so the value reads as positive in
 * two's complement (X.690 §8.3.2: the minimal encoding).
 */
export function unsignedInteger(octets: Buffer | number): Buffer {
  let bytes = typeof octets === 'number' ? Buffer.from([octets]) : octets;
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  bytes = bytes.subarray(start);
  if (bytes.length === 0) bytes = Buffer.from([0]);
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes);
}

/** X.690 §8.19: the first two arcs as 40 * a + b, then each arc in base 128, high bit set on all but its last octet. */
export function objectIdentifier(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  if (arcs.length < 2 || arcs.some((arc) => !Number.isSafeInteger(arc) || arc < 0)) throw new Error(`not an object identifier: ${dotted}`);
  const octets: number[] = [];
  for (const arc of [arcs[0]! * 40 + arcs[1]!, ...arcs.slice(2)]) {
    const group = [arc % 128];
    for (let rest = Math.floor(arc / 128); rest > 0; rest = Math.floor(rest / 128)) group.unshift(0x80 | (rest % 128));
    octets.push(...group);
  }
  return tlv(0x06, Buffer.from(octets));
}

export const octetString = (value: Buffer): Buffer => tlv(0x04, value);

/** A BIT STRING of whole octets (a key, a signature): the first value octet counts the unused bits, here 0. */
export const bitString = (value: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), value]));

/**
 * A named-bit BIT STRING (keyUsage): bit 0 is the first octet's top bit. DER drops trailing zero bits
 * (X.690 §11.2.2), so the last octet's unused-bit count is the run of zeros after the highest bit set.
 */
export function namedBits(bits: readonly number[]): Buffer {
  const highest = Math.max(...bits);
  const octets = Buffer.alloc(Math.floor(highest / 8) + 1);
  for (const bit of bits) octets[Math.floor(bit / 8)]! |= 0x80 >> (bit % 8);
  return tlv(0x03, Buffer.concat([Buffer.from([7 - (highest % 8)]), octets]));
}

export const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));

/** PrintableString: A-Z a-z 0-9, space and '()+,-./:=? only (X.680 §41.4). */
export function printableString(text: string): Buffer {
  for (const char of text) {
    if (!/[A-Za-z0-9 '()+,\-./:=?]/.test(char)) throw new Error(`not a PrintableString: ${JSON.stringify(text)}`);
  }
  return tlv(0x13, Buffer.from(text, 'ascii'));
}

const twoDigits = (value: number): string => String(value).padStart(2, '0');

/**
 * A certificate's date as RFC 5280 §4.1.2.5 asks: UTCTime (YYMMDDHHMMSSZ) through 2049, GeneralizedTime
 * (YYYYMMDDHHMMSSZ) from 2050, always in UTC with seconds and no fraction.
 */
export function time(date: Date): Buffer {
  const year = date.getUTCFullYear();
  const rest = [date.getUTCMonth() + 1, date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds()].map(twoDigits).join('');
  if (year >= 1950 && year < 2050) return tlv(0x17, Buffer.from(`${twoDigits(year % 100)}${rest}Z`, 'ascii'));
  return tlv(0x18, Buffer.from(`${String(year).padStart(4, '0')}${rest}Z`, 'ascii'));
}

/** [n] EXPLICIT: a constructed context-specific tag around a whole encoding. */
export const explicit = (tagNumber: number, inner: Buffer): Buffer => tlv(0xa0 | tagNumber, inner);

/** [n] IMPLICIT of a primitive type: a context-specific tag in place of the type's own, over the raw value. */
export const implicitPrimitive = (tagNumber: number, value: Buffer): Buffer => tlv(0x80 | tagNumber, value);

/**
 * The value of the last element of a SEQUENCE's encoding: what x509.ts needs to read back of
 * SubjectPublicKeyInfo (its subjectPublicKey BIT STRING). Only definite lengths, as DER has.
 */
export function lastElementValue(encoding: Buffer): { tag: number; value: Buffer } {
  const outer = readTlv(encoding, 0);
  let offset = outer.valueStart;
  let last: ReturnType<typeof readTlv> | undefined;
  while (offset < outer.end) {
    last = readTlv(encoding, offset);
    offset = last.end;
  }
  if (!last || offset !== outer.end || outer.end !== encoding.length) throw new Error('not a DER SEQUENCE with elements');
  return { tag: last.tag, value: encoding.subarray(last.valueStart, last.end) };
}

function readTlv(encoding: Buffer, offset: number): { tag: number; valueStart: number; end: number } {
  const tag = encoding[offset];
  const first = encoding[offset + 1];
  if (tag === undefined || first === undefined) throw new Error('DER value cut short');
  let length = first;
  let valueStart = offset + 2;
  if (first & 0x80) {
    const count = first & 0x7f;
    if (count === 0 || count > 4) throw new Error('DER length not definite or too long');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + (encoding[valueStart + i] ?? Number.NaN);
    valueStart += count;
  }
  const end = valueStart + length;
  if (!Number.isSafeInteger(end) || end > encoding.length) throw new Error('DER value cut short');
  return { tag, valueStart, end };
}
