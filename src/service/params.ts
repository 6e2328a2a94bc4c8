import { badRequest, invalidValue, type ApiError } from './errors.js';
import { cleanText, TEXT_FIELDS, type TextKind } from './text-rules.js';

type RawValue = string | string[] | undefined;

/**
 * The parameters of one call: query string and form body merged (the body wins), as the real service
 * accepts either. Unknown parameters are ignored, as the spec's versioning rules require.
 *
 * Text is read through the rules of text-rules.ts, here and nowhere else: a field of TEXT_FIELDS
 * (`subject`, `desc`, `body`) is cleaned or refused whichever operation reads it (docs/protocol.md
 * "Text fields"). Broken %-encoding never gets here: form-decoding.ts refuses it.
 */
export class Params {
  private readonly values = new Map<string, RawValue>();

  constructor(...sources: Array<Record<string, unknown> | undefined | null>) {
    for (const source of sources) {
      if (!source || typeof source !== 'object') continue;
      for (const [key, value] of Object.entries(source)) {
        if (typeof value === 'string') this.values.set(key, value);
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
    const value = this.single(name);
    const field = TEXT_FIELDS[name];
    if (value === undefined || !field) return value;
    return this.cleaned(value, field.kind((other) => this.rawText(other)), field.refused);
  }

  /**
   * A text value read by the rules of `kind` (text-rules.ts), for a field TEXT_FIELDS does not name;
   * refused as `invalid_value` naming it.
   */
  text(name: string, kind: TextKind): string | undefined {
    const value = this.single(name);
    return value === undefined ? undefined : this.cleaned(value, kind, () => invalidValue(name));
  }

  /** An HTML field: the `html` rules, so what comes back is sanitised. */
  html(name: string): string | undefined {
    return this.text(name, 'html');
  }

  /** A required id-like value; missing or empty is `bad_request` with the given extra. */
  requiredId(name: string, extra = `invalid ${name}`): string {
    const value = this.single(name);
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
    const value = this.single(name);
    if (value === undefined || value === '') return undefined;
    if (!(allowed as readonly string[]).includes(value)) throw badRequest(extra);
    return value as T;
  }

  /** The one value sent for `name`, as sent; a repeated one is `invalid_value`. */
  private single(name: string): string | undefined {
    const value = this.values.get(name);
    if (Array.isArray(value)) throw invalidValue(name);
    return value;
  }

  /** A value as sent, for the rules that depend on another field (`body` on `body_type`). */
  private rawText(name: string): string | undefined {
    const value = this.values.get(name);
    return typeof value === 'string' ? value : undefined;
  }

  private cleaned(value: string, kind: TextKind, refused: () => ApiError): string {
    const clean = cleanText(value, kind);
    if (clean === undefined) throw refused();
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
