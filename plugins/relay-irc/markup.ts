import { withoutTags } from '../../src/index.js';
import { hasTagNamed, isBare, rawAttribute, tagsNamed, type Tag } from './html-tags.js';

/**
 * HTML in a chat message reduced to plain text for IRC. Only text with real HTML tags is treated as
 * HTML, so "<3", "a < b" or "<bob> said" in a plain message stay as they are.
 *
 * One pass over the tags (html-tags.ts) and one over the result: the text is a user's, up to 1 MiB,
 * and every step is linear in it (issue #31: the regular expressions this replaces took 318 ms on a
 * 10,000-character line of spaces and minutes on 1 MiB).
 */

const HTML_TAGS = new Set(['p', 'br', 'div', 'span', 'a', 'b', 'strong', 'i', 'em', 'u', 's', 'strike', 'del', 'ins', 'code', 'pre',
  'blockquote', 'ul', 'ol', 'li', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'img', 'hr', 'table', 'thead', 'tbody', 'tr', 'td', 'th', 'font',
  'small', 'big', 'sub', 'sup', 'mark']);

/** Closing tags that end a line. */
const BLOCK_ENDS = new Set(['p', 'div', 'tr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'pre', 'ul', 'ol', 'table']);

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (whole, name: string) => {
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : Number(name.slice(1));
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code === 0xa0 ? 0x20 : code) : whole;
    }
    return NAMED[name.toLowerCase()] ?? whole;
  });
}

function attribute(tag: Tag, name: string): string | undefined {
  const value = rawAttribute(tag.attrs, name);
  return value === undefined ? undefined : decodeEntities(value.replace(/\r?\n/g, ' '));
}

/** Tags that become text (or take their content with them); every other tag is simply left out. */
function converted(name: string, closing: boolean): boolean {
  return closing ? BLOCK_ENDS.has(name) || CLOSED.has(name) : OPENING.has(name);
}
const OPENING = new Set(['script', 'style', 'pre', 'a', 'img', 'br', 'li', 'hr']);
const CLOSED = new Set(['td', 'th', 'a', 'script', 'style', 'pre']);
const PAIRED = new Set(['a', 'pre', 'script', 'style']);

/**
 * For each opening tag of `names`, the index (in `tags`) of the first closing tag of the same name after
 * it, found with one pointer per name that only moves forward.
 */
function closers(tags: readonly Tag[], names: readonly string[]): Map<number, number> {
  const found = new Map<number, number>();
  for (const name of names) {
    let next = 0;
    for (let i = 0; i < tags.length; i += 1) {
      if (tags[i]!.closing || tags[i]!.name !== name) continue;
      if (next <= i) next = i + 1;
      while (next < tags.length && !(tags[next]!.closing && tags[next]!.name === name && isBare(tags[next]!.attrs))) next += 1;
      if (next < tags.length) found.set(i, next);
    }
  }
  return found;
}

/** What a converted tag other than a paired <a>, <script>, <style> or <pre> becomes. */
function tagText(tag: Tag): string {
  if (tag.closing) return BLOCK_ENDS.has(tag.name) && isBare(tag.attrs) ? '\n' : (tag.name === 'td' || tag.name === 'th') && isBare(tag.attrs) ? ' ' : '';
  switch (tag.name) {
    case 'br': return isBare(tag.attrs, true) ? '\n' : '';
    case 'li': return '\n• ';
    case 'hr': return '\n----\n';
    case 'img': {
      const alt = attribute(tag, 'alt');
      const src = attribute(tag, 'src');
      return `[${alt || 'image'}]${src ? ` (${src})` : ''}`;
    }
    default: return '';
  }
}

/** A link as text: its label (tags, scripts and styles left out) and, when it says something else, its address. */
function linkText(text: string, tags: readonly Tag[], closes: ReadonlyMap<number, number>, open: number, close: number): string {
  let inner = '';
  let at = tags[open]!.end;
  for (let i = open + 1; i < close; i += 1) {
    const inside = closes.get(i);
    if (tags[i]!.closing || (tags[i]!.name !== 'script' && tags[i]!.name !== 'style') || inside === undefined || inside >= close) continue;
    inner += text.slice(at, tags[i]!.start);
    at = tags[inside]!.end;
    i = inside;
  }
  inner += text.slice(at, tags[close]!.start);
  const href = attribute(tags[open]!, 'href');
  const label = decodeEntities(withoutTags(inner).replace(/\r?\n/g, ' ')).trim();
  if (!href || href === label || `mailto:${label}` === href) return label || href || '';
  return label ? `${label} (${href})` : href;
}

/** A piece of the message: text still to be read as HTML (`raw`), or what a converted tag became. */
type Piece = { raw: string } | { text: string };

/** Plain text from a message that may be HTML: block ends and <br> become line breaks, links keep their address. */
export function markupToText(text: string): string {
  if (!hasTagNamed(text, HTML_TAGS)) return text;
  const tags = tagsNamed(text, converted);
  const closes = closers(tags, ['script', 'style', 'pre', 'a']);
  const pieces: Piece[] = [];
  let at = 0;
  let preEnd = -1;
  // Raw line breaks are spaces in HTML, except inside <pre>.
  const raw = (to: number, inPre: boolean) => pieces.push({ raw: text.slice(at, to).replace(/\r?\n/g, inPre ? '\n' : ' ') });
  for (let i = 0; i < tags.length; i += 1) {
    const tag = tags[i]!;
    const close = tag.closing ? undefined : closes.get(i);
    // An <a>, <pre>, <script> or <style> without its closing tag (or such a closing tag alone) is an ordinary tag.
    if (PAIRED.has(tag.name) && (tag.closing ? !BLOCK_ENDS.has(tag.name) : close === undefined)) continue;
    raw(tag.start, i <= preEnd);
    at = tag.end;
    if (close !== undefined && (tag.name === 'script' || tag.name === 'style')) {
      at = tags[close]!.end;
      i = close;
    } else if (close !== undefined && tag.name === 'a') {
      pieces.push({ text: linkText(text, tags, closes, i, close) });
      at = tags[close]!.end;
      i = close;
    } else if (close !== undefined && tag.name === 'pre') {
      preEnd = Math.max(preEnd, close);
    } else {
      pieces.push({ text: tagText(tag) });
    }
  }
  raw(text.length, false);
  return tidyLines(withoutOtherTags(pieces)).trim();
}

/**
 * The pieces joined, every other tag (`<` up to the next `>` of the raw text) left out with whatever
 * it spans, and the raw text's entities decoded.
 */
function withoutOtherTags(pieces: readonly Piece[]): string {
  // Where the raw text's last `>` is: a `<` after it opens no tag.
  let lastPiece = -1;
  for (let p = pieces.length - 1; p >= 0 && lastPiece === -1; p -= 1) {
    const piece = pieces[p]!;
    if ('raw' in piece && piece.raw.includes('>')) lastPiece = p;
  }
  let out = '';
  let pending = '';
  let inTag = false;
  for (let p = 0; p < pieces.length; p += 1) {
    const piece = pieces[p]!;
    if (!('raw' in piece)) {
      if (!inTag) {
        out += decodeEntities(pending) + piece.text;
        pending = '';
      }
      continue;
    }
    let at = 0;
    while (at < piece.raw.length) {
      if (inTag) {
        const gt = piece.raw.indexOf('>', at);
        if (gt === -1) break;
        inTag = false;
        at = gt + 1;
        continue;
      }
      const open = piece.raw.indexOf('<', at);
      const opens = open !== -1 && (p < lastPiece || (p === lastPiece && piece.raw.indexOf('>', open) !== -1));
      if (!opens) {
        pending += piece.raw.slice(at);
        break;
      }
      pending += piece.raw.slice(at, open);
      inTag = true;
      at = open + 1;
    }
  }
  return out + decodeEntities(pending);
}
/** Spaces and tabs before a line break dropped, and more than two line breaks in a row made two. */
export function tidyLines(text: string): string {
  let out = '';
  let blanks = '';
  let breaks = 0;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i]!;
    if (char === ' ' || char === '\t') blanks += char;
    else if (char === '\n') {
      blanks = '';
      breaks += 1;
    } else {
      if (breaks > 0) out += breaks >= 3 ? '\n\n' : '\n'.repeat(breaks);
      out += blanks + char;
      blanks = '';
      breaks = 0;
    }
  }
  if (breaks > 0) out += breaks >= 3 ? '\n\n' : '\n'.repeat(breaks);
  return out + blanks;
}
