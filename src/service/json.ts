import { WireId, type IdStyle } from './ids.js';

const DIGITS = /^(0|[1-9][0-9]*)$/;

/**
 * JSON.stringify with one addition: WireId values become bare integers when the id style is numeric or
 * big (so integers above 2^53 keep every digit, which JSON.stringify cannot do on Node 20) and strings
 * otherwise. An id that is not all digits is always written as a string.
 */
export function toWireJson(value: unknown, style: IdStyle): string {
  const parts: string[] = [];
  write(value, style, parts);
  return parts.join('');
}

function write(value: unknown, style: IdStyle, out: string[]): void {
  if (value instanceof WireId) {
    out.push(style !== 'opaque' && DIGITS.test(value.value) ? value.value : JSON.stringify(value.value));
    return;
  }
  if (Array.isArray(value)) {
    out.push('[');
    value.forEach((item, index) => {
      if (index > 0) out.push(',');
      write(item === undefined ? null : item, style, out);
    });
    out.push(']');
    return;
  }
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    out.push('{');
    let first = true;
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined) continue;
      if (!first) out.push(',');
      first = false;
      out.push(JSON.stringify(key), ':');
      write(item, style, out);
    }
    out.push('}');
    return;
  }
  out.push(JSON.stringify(value) ?? 'null');
}
