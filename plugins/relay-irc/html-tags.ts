/**
 * The tags of a text that may be HTML, found in one pass (issue #31: the regular expressions this
 * replaces searched from every `<` to the end of the text, quadratic on a long run of `<a` or spaces).
 *
 * A tag runs from a `<` to the first `>` after it (a `<` with no `>` after it is text). Its name is the
 * run of word characters after `<` or `</`, lower-cased ("" for `<3 >`, `<!--`).
 */

export interface Tag {
  /** Index of the `<`. */
  start: number;
  /** Index just after the `>`. */
  end: number;
  closing: boolean;
  name: string;
  /** What follows the name, up to the `>`. */
  attrs: string;
}

const isWordChar = (code: number) =>
  (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;

/**
 * The tags of `text` whose name `wanted` takes (opening or closing), each found at its own `<` even
 * after a stray `<` ("<3<img>" holds an <img>), none inside another. Linear: the next `>` is found once
 * and reused for every `<` before it.
 */
export function tagsNamed(text: string, wanted: (name: string, closing: boolean) => boolean): Tag[] {
  const tags: Tag[] = [];
  let gt = -1;
  for (let at = text.indexOf('<'); at !== -1; at = text.indexOf('<', at + 1)) {
    if (gt < at) gt = text.indexOf('>', at + 1);
    // No `>` after this `<`: none after any later one either.
    if (gt === -1) break;
    const closing = text[at + 1] === '/';
    const from = closing ? at + 2 : at + 1;
    let nameEnd = from;
    while (nameEnd < gt && isWordChar(text.charCodeAt(nameEnd))) nameEnd += 1;
    const name = text.slice(from, nameEnd).toLowerCase();
    if (!wanted(name, closing)) continue;
    tags.push({ start: at, end: gt + 1, closing, name, attrs: text.slice(nameEnd, gt) });
    at = gt;
  }
  return tags;
}

/** Whether some `<name` or `</name` (`name` one of `names`, a whole word) has a `>` after it: the text holds real tags. */
export function hasTagNamed(text: string, names: ReadonlySet<string>): boolean {
  const lastGt = text.lastIndexOf('>');
  for (let at = text.indexOf('<'); at !== -1 && at < lastGt; at = text.indexOf('<', at + 1)) {
    const from = text[at + 1] === '/' ? at + 2 : at + 1;
    let end = from;
    while (end < text.length && isWordChar(text.charCodeAt(end))) end += 1;
    if (end > from && end <= lastGt && names.has(text.slice(from, end).toLowerCase())) return true;
  }
  return false;
}

/** True when a tag's text after its name is only white space (`</p >`), or that and one `/` (`<br />`). */
export function isBare(attrs: string, slash = false): boolean {
  const rest = attrs.trim();
  return rest === '' || (slash && rest === '/' && !/\/\s/.test(attrs));
}

/**
 * The raw value of attribute `name` in a tag's attribute text, read left to right: `name="v"`,
 * `name='v'` or `name=v`. A quote that is never closed makes the value run to the next white space.
 */
export function rawAttribute(attrs: string, name: string): string | undefined {
  const unclosed = new Set<string>();
  let at = 0;
  while (at < attrs.length) {
    while (at < attrs.length && !isWordChar(attrs.charCodeAt(at))) at += 1;
    const nameStart = at;
    while (at < attrs.length && (isWordChar(attrs.charCodeAt(at)) || attrs[at] === '-' || attrs[at] === ':')) at += 1;
    const found = attrs.slice(nameStart, at).toLowerCase();
    while (at < attrs.length && /\s/.test(attrs[at]!)) at += 1;
    if (attrs[at] !== '=') continue;
    at += 1;
    while (at < attrs.length && /\s/.test(attrs[at]!)) at += 1;
    let value: string;
    const quote = attrs[at];
    const close = (quote === '"' || quote === "'") && !unclosed.has(quote) ? attrs.indexOf(quote, at + 1) : -1;
    if (close !== -1) {
      value = attrs.slice(at + 1, close);
      at = close + 1;
    } else {
      // Remembered, so a text of many unclosed quotes is not searched to its end from each of them.
      if (quote === '"' || quote === "'") unclosed.add(quote);
      const start = at;
      while (at < attrs.length && !/\s/.test(attrs[at]!)) at += 1;
      value = attrs.slice(start, at);
    }
    if (found === name) return value;
  }
  return undefined;
}
