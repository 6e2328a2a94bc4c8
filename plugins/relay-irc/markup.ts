/**
 * HTML in a chat message reduced to plain text for IRC. Only text with real HTML tags is treated as
 * HTML, so "<3", "a < b" or "<bob> said" in a plain message stay as they are.
 */

const HTML_TAG = /<\/?(?:p|br|div|span|a|b|strong|i|em|u|s|strike|del|ins|code|pre|blockquote|ul|ol|li|h[1-6]|img|hr|table|thead|tbody|tr|td|th|font|small|big|sub|sup|mark)\b[^>]*>/i;

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

function attribute(tag: string, name: string): string | undefined {
  const match = new RegExp(`\\b${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  return match ? decodeEntities(match[1] ?? match[2] ?? match[3] ?? '') : undefined;
}

/** Plain text from a message that may be HTML: block ends and <br> become line breaks, links keep their address. */
export function markupToText(text: string): string {
  if (!HTML_TAG.test(text)) return text;
  const plain = text
    .replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, '')
    // Raw line breaks are spaces in HTML, except inside <pre>.
    .replace(/<pre\b[^>]*>([\s\S]*?)<\/pre\s*>/gi, (_, inner: string) => `${inner.replace(/\r?\n/g, '<br>')}</pre>`)
    .replace(/\r?\n/g, ' ')
    .replace(/<a\b([^>]*)>([\s\S]*?)<\/a\s*>/gi, (_, attrs: string, inner: string) => {
      const href = attribute(attrs, 'href');
      const label = decodeEntities(inner.replace(/<[^>]*>/g, '')).trim();
      if (!href || href === label || `mailto:${label}` === href) return label || href || '';
      return label ? `${label} (${href})` : href;
    })
    .replace(/<img\b([^>]*)>/gi, (_, attrs: string) => {
      const alt = attribute(attrs, 'alt');
      const src = attribute(attrs, 'src');
      return `[${alt || 'image'}]${src ? ` (${src})` : ''}`;
    })
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<li\b[^>]*>/gi, '\n• ')
    .replace(/<\/(p|div|tr|h[1-6]|blockquote|pre|ul|ol|table)\s*>/gi, '\n')
    .replace(/<hr\b[^>]*>/gi, '\n----\n')
    .replace(/<\/t[dh]\s*>/gi, ' ')
    .replace(/<[^>]*>/g, '');
  return decodeEntities(plain).replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
}
