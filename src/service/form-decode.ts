/**
 * Query strings and `application/x-www-form-urlencoded` bodies, decoded strictly. The usual parsers
 * keep a value whose %-encoding is broken (`%ZZ`, a cut `%E0%A4%A`, bytes that are not UTF-8) as its
 * raw text, which the service then stored literally (issue #15 item 16). Here such a value is marked
 * broken instead, and Params refuses it when the operation reads that field (`invalid_value` naming it,
 * or the error the spec names for it); a broken parameter no operation reads is ignored like any
 * unknown one. Only the parser can tell, since `%ZZ` sent as `%25ZZ` is a fine value.
 */

/** A value whose encoding was broken: it has no text, only the fact that it was sent. */
export class BrokenEncoding {
  static readonly instance = new BrokenEncoding();
  private constructor() {}
}

export type FormValue = string | string[] | BrokenEncoding;
export type FormFields = Record<string, FormValue>;

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Decodes `a=1&b=x+y&b=%C3%A9` into fields (a repeated name gives an array, as fastify's parsers do).
 * Takes the text after `?`, or a form body as a string or, better, as bytes: raw bytes that are not
 * UTF-8 can only be seen before they are turned into a string. A pair whose name is broken is dropped
 * (it cannot name any parameter). The result has no prototype, so `__proto__` is just a name.
 */
export function decodeForm(input: string | Buffer): FormFields {
  const fields: FormFields = Object.create(null) as FormFields;
  const text = typeof input === 'string' ? input : input.toString('latin1');
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const name = decodePart(equals < 0 ? pair : pair.slice(0, equals), typeof input !== 'string');
    if (name === undefined) continue;
    const value = decodePart(equals < 0 ? '' : pair.slice(equals + 1), typeof input !== 'string');
    add(fields, name, value ?? BrokenEncoding.instance);
  }
  return fields;
}

/** The query string of a request target (`/path?query`), decoded strictly. */
export function decodeQuery(url: string): FormFields {
  const mark = url.indexOf('?');
  return decodeForm(mark < 0 ? '' : url.slice(mark + 1).split('#')[0]!);
}

function add(fields: FormFields, name: string, value: string | BrokenEncoding): void {
  const before = fields[name];
  if (before === undefined) fields[name] = value;
  else if (before instanceof BrokenEncoding || value instanceof BrokenEncoding) fields[name] = BrokenEncoding.instance;
  else fields[name] = Array.isArray(before) ? [...before, value] : [before, value];
}

/**
 * One name or value: `+` is a space, `%XX` a byte, and the bytes must be UTF-8. `latin1` carries raw
 * bytes of a body read as a Buffer (each char one byte), checked as UTF-8 too.
 */
function decodePart(part: string, rawBytes: boolean): string | undefined {
  const spaced = part.replace(/\+/g, ' ');
  if (!rawBytes || /^[\x00-\x7f]*$/.test(spaced)) return decodePercent(spaced);
  // Raw bytes: %-decode byte-wise, then read the bytes as UTF-8.
  const bytes: number[] = [];
  for (let i = 0; i < spaced.length; i += 1) {
    const code = spaced.charCodeAt(i);
    if (code === 0x25) {
      const hex = spaced.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(code);
  }
  try {
    return fatalUtf8.decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
}

function decodePercent(part: string): string | undefined {
  if (!part.includes('%')) return part;
  try {
    // Throws on a `%` without two hex digits and on bytes that are not UTF-8 (encoded surrogates too).
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}
