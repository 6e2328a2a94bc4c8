/**
 * Slack message markup to plain chat text. Slack escapes `&`, `<`, `>` in text and writes links and
 * mentions as `<…>` sequences:
 * - `<@U123>` / `<@U123|label>`: a user → `@display name` (looked up), else the label, else the id;
 * - `<#C123|name>` / `<#C123>`: a channel → `#name` (looked up when there is no name);
 * - `<!here>`, `<!channel>`, `<!everyone>` → `@here`, ...; `<!subteam^S1|@team>` → `@team`;
 *   `<!date^…|fallback>` → the fallback;
 * - `<https://x|label>` → `label (https://x)`; `<https://x>` → `https://x`; `<mailto:a@b|a@b>` → `a@b`.
 * Entities are unescaped last, piece by piece, so `&amp;lt;` comes out as `&lt;`, not `<`.
 */

export interface NameLookup {
  user(id: string): Promise<string | undefined>;
  channel(id: string): Promise<string | undefined>;
}

const TOKEN = /<([^<>]*)>/g;

export async function slackToPlain(text: string, names: NameLookup): Promise<string> {
  let out = '';
  let last = 0;
  for (const match of text.matchAll(TOKEN)) {
    out += unescapeSlack(text.slice(last, match.index));
    out += await token(match[1]!, names);
    last = match.index + match[0].length;
  }
  return out + unescapeSlack(text.slice(last));
}

async function token(body: string, names: NameLookup): Promise<string> {
  const bar = body.indexOf('|');
  const target = bar === -1 ? body : body.slice(0, bar);
  const label = bar === -1 ? '' : unescapeSlack(body.slice(bar + 1));
  if (target.startsWith('@')) {
    const id = target.slice(1);
    const name = await names.user(id);
    return `@${name ?? (label.replace(/^@/, '') || id)}`;
  }
  if (target.startsWith('#')) {
    const id = target.slice(1);
    return `#${label || (await names.channel(id)) || id}`;
  }
  if (target.startsWith('!')) return special(target.slice(1), label);
  const url = unescapeSlack(target);
  if (url.startsWith('mailto:')) {
    const address = url.slice('mailto:'.length);
    return !label || label === address ? address : `${label} (${address})`;
  }
  return !label || label === url || `http://${label}` === url || `https://${label}` === url ? url : `${label} (${url})`;
}

function special(command: string, label: string): string {
  const [name = '', id = ''] = command.split('^');
  if (name === 'here' || name === 'channel' || name === 'everyone') return `@${name}`;
  if (name === 'subteam') return label ? `@${label.replace(/^@/, '')}` : `@${id}`;
  if (label) return label;
  return name === 'date' ? '' : `@${name}`;
}

/** `&lt;` → `<`, `&gt;` → `>`, `&amp;` → `&`, in one pass. */
export function unescapeSlack(text: string): string {
  return text.replace(/&(amp|lt|gt);/g, (_, entity: string) => (entity === 'amp' ? '&' : entity === 'lt' ? '<' : '>'));
}
