import { badRequest } from './errors.js';

/** Parameter values as decoded: a name given twice keeps both values (Params refuses it where it matters). */
export type DecodedParams = Record<string, string | string[]>;

/**
 * Decodes `application/x-www-form-urlencoded` text (a form body or a query string) strictly: a `%`
 * that does not start two hex digits, or escapes that do not spell UTF-8, are refused as
 * `bad_request` naming the parameter, instead of being kept as literal text (which would store
 * something the caller never meant). `+` is a space, as in every form encoder.
 */
export function decodeForm(text: string, where: 'query string' | 'form body'): DecodedParams {
  // No prototype: a parameter named __proto__ is an ordinary (ignored) name, not a prototype.
  const out = Object.create(null) as DecodedParams;
  if (text === '') return out;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const rawName = equals < 0 ? pair : pair.slice(0, equals);
    const rawValue = equals < 0 ? '' : pair.slice(equals + 1);
    const name = decodeComponent(rawName, () => `broken %-encoding in the ${where} (a parameter name)`);
    const value = decodeComponent(rawValue, () => `broken %-encoding in the ${where} (parameter ${name})`);
    const earlier = out[name];
    // Added in place: copying the list for each repeat took time in the square of the repeats (#31: a
    // 256 KB body of `a&` took 88 s).
    if (earlier === undefined) out[name] = value;
    else if (Array.isArray(earlier)) earlier.push(value);
    else out[name] = [earlier, value];
  }
  return out;
}

function decodeComponent(raw: string, describe: () => string): string {
  const spaced = raw.includes('+') ? raw.replace(/\+/g, ' ') : raw;
  if (!spaced.includes('%')) return spaced;
  try {
    // decodeURIComponent refuses both a malformed escape and escaped bytes that are not UTF-8.
    return decodeURIComponent(spaced);
  } catch {
    throw badRequest(describe());
  }
}

/** The query string of a request target, without the `?`; '' when there is none. */
export function queryOf(url: string): string {
  const mark = url.indexOf('?');
  if (mark < 0) return '';
  const hash = url.indexOf('#', mark);
  return url.slice(mark + 1, hash < 0 ? undefined : hash);
}
