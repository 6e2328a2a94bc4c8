import { ApiError, badRequest, invalidValue } from './errors.js';
import { BrokenEncoding } from './form-decode.js';
import { cleanText, refusalOf, TEXT_FIELDS, type TextKind } from './text-rules.js';

type RawValue = string | string[] | BrokenEncoding | undefined;

/**
 * The parameters of one call: query string and form body merged (the body wins), as the real service
 * accepts either. Unknown parameters are ignored, as the spec's versioning rules require.
 *
 * Text is read through the rules of text-rules.ts, here and nowhere else: a field of TEXT_FIELDS
 * (`subject`, `desc`, `body`) is cleaned or refused whichever operation reads it, and a value whose
 * %-encoding was broken (form-decode.ts) is refused when it is read (docs/protocol.md "Text fields").
 */
export class Params {
  private readonly values = new Map<string, RawValue>();

  constructor(...sources: Array<Record<string, unknown> | undefined | null>) {
    for (const source of sources) {
      if (!source || typeof source !== 'object') continue;
      for (const [key, value] of Object.entries(source)) {
        if (typeof value === 'string' || value instanceof BrokenEncoding) this.values.set(key, value);
        else if (Array.isArray(value)) this.values.set(key, value.map(String));
        else if (typeof value === 'number' || typeof value === 'boolean') this.values.set(key, String(value));
      }
    }
  }

  has(name: string): boolean {
    const value = this.values.get(name);
    return value !== undefined && value !== '';
  }

  /**
   * A single string value; a repeated parameter is an invalid value. A text field of TEXT_FIELDS comes
   * back cleaned by its kind's rules, or is refused with its error.
   */
  string(name: string): string | undefined {
    const value = this.single(name, () => refusalOf(name));
    const kindOf = TEXT_FIELDS[name];
    if (value === undefined || !kindOf) return value;
    return this.cleaned(name, value, kindOf((other) => this.rawText(other)));
  }

  /** A text value read by the rules of `kind` (text-rules.ts), for a field TEXT_FIELDS does not name. */
  text(name: string, kind: TextKind): string | undefined {
    const value = this.single(name, () => refusalOf(name));
    return value === undefined ? undefined : this.cleaned(name, value, kind);
  }

  /** An HTML field: the `html` rules, so what comes back is sanitised. */
  html(name: string): string | undefined {
    return this.text(name, 'html');
  }

  /** A required id-like value; missing or empty is `bad_request` with the given extra. */
  requiredId(name: string, extra = `invalid ${name}`): string {
    const value = this.single(name, () => badRequest(extra));
    if (value === undefined || value === '' || value.length > 255) throw badRequest(extra);
    return value;
  }

  optionalId(name: string): string | undefined {
    const value = this.string(name);
    if (value === undefined || value === '') return undefined;
    if (value.length > 255) throw invalidValue(name);
    return value;
  }

  /** Booleans as the spec describes them: true/false, with the numeric form 1/0 accepted too. */
  boolean(name: string): boolean | undefined {
    const value = this.string(name);
    if (value === undefined || value === '') return undefined;
    const parsed = parseBoolean(value);
    if (parsed === undefined) throw invalidValue(name);
    return parsed;
  }

  integer(name: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number | undefined {
    const value = this.string(name);
    if (value === undefined || value === '') return undefined;
    if (!/^-?\d+$/.test(value.trim())) throw invalidValue(name);
    const parsed = Number(value.trim());
    if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) throw invalidValue(name);
    return parsed;
  }

  /** One of a fixed set of values; anything else is `bad_request` with the given extra. */
  oneOf<T extends string>(name: string, allowed: readonly T[], extra = `invalid ${name}`): T | undefined {
    const value = this.single(name, () => badRequest(extra));
    if (value === undefined || value === '') return undefined;
    if (!(allowed as readonly string[]).includes(value)) throw badRequest(extra);
    return value as T;
  }

  /** The one value sent for `name`; a repeated one is `invalid_value`, a broken one `refused()`. */
  private single(name: string, refused: () => ApiError): string | undefined {
    const value = this.values.get(name);
    if (Array.isArray(value)) throw invalidValue(name);
    if (value instanceof BrokenEncoding) throw refused();
    return value;
  }

  /** A value as sent, for the rules that depend on another field (`body` on `body_type`). */
  private rawText(name: string): string | undefined {
    const value = this.values.get(name);
    return typeof value === 'string' ? value : undefined;
  }

  private cleaned(name: string, value: string, kind: TextKind): string {
    const clean = cleanText(value, kind);
    if (clean === undefined) throw refusalOf(name);
    return clean;
  }
}

export function parseBoolean(value: string): boolean | undefined {
  switch (value.trim().toLowerCase()) {
    case 'true':
    case '1':
    case 'yes':
    case 'on':
      return true;
    case 'false':
    case '0':
    case 'no':
    case 'off':
      return false;
    default:
      return undefined;
  }
}
