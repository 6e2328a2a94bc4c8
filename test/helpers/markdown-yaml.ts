import { readFileSync } from 'node:fs';

/**
 * The YAML examples of a markdown page, as README.md "Development" describes:
 * a ```yaml block is a whole bots.yaml unless the line above it is a marker:
 * - `<!-- yaml: bots.yaml part -->`: keys of bots.yaml, checked inside a minimal bots.yaml (a
 *   `plugins:` list goes into its bot, any other key replaces the minimal file's, `key: …` is left out);
 * - `<!-- yaml: gateways part -->`: a `gateways:` list, checked inside a minimal bots.yaml whose one bot
 *   has the chats its endpoints name and a relay for each platform they name (irc, slack, discord,
 *   mail), with no channels of its own (`plugins: …` is left out);
 * - `<!-- yaml: seed -->`: a seed file of the local service (`groupwire serve --seed`);
 * - `<!-- yaml: parse only ... -->`: another program's file, or an excerpt that needs the rest of its
 *   page: parsed as YAML, not checked.
 * A code block of the page whose first line is `// plugins-local/NAME.js` (or .ts) is a file the
 * page's bots.yaml may use: it is written there before they are checked.
 */

export type YamlKind = 'bots.yaml' | 'bots.yaml part' | 'gateways part' | 'seed' | 'parse only';

export interface YamlExample {
  /** `docs/gateways.md:15`: the page and the line of the opening fence. */
  where: string;
  kind: YamlKind;
  text: string;
}

export interface PageExamples {
  yaml: YamlExample[];
  /** Files the page's code blocks stand for: path (relative to a bots.yaml) → content. */
  files: Map<string, string>;
}

const MARKERS: Record<string, YamlKind> = {
  'bots.yaml part': 'bots.yaml part', 'gateways part': 'gateways part', seed: 'seed', 'parse only': 'parse only',
};

export function examplesOf(path: string, shownAs: string): PageExamples {
  const lines = readFileSync(path, 'utf8').split('\n');
  const yaml: YamlExample[] = [];
  const files = new Map<string, string>();
  for (let index = 0; index < lines.length; index += 1) {
    const open = fenceOf(lines[index]!);
    if (!open) continue;
    const body: string[] = [];
    let end = index + 1;
    for (; end < lines.length; end += 1) {
      const close = fenceOf(lines[end]!);
      if (close && close.info === '' && close.ticks >= open.ticks) break;
      // A fence indented in a list item: its lines carry the same indentation.
      body.push(lines[end]!.slice(Math.min(open.indent, leadingSpaces(lines[end]!))));
    }
    const where = `${shownAs}:${index + 1}`;
    if (open.info === 'yaml' || open.info === 'yml') {
      yaml.push({ where, kind: markerAbove(lines, index, where), text: `${body.join('\n')}\n` });
    } else {
      const named = /^\/\/ (plugins-local\/[\w.-]+\.(?:js|ts))$/.exec(body[0] ?? '');
      if (named) files.set(named[1]!, `${body.join('\n')}\n`);
    }
    index = end;
  }
  return { yaml, files };
}

function fenceOf(line: string): { indent: number; ticks: number; info: string } | undefined {
  const indent = leadingSpaces(line);
  let ticks = 0;
  while (line[indent + ticks] === '`') ticks += 1;
  if (ticks < 3 || indent > 8) return undefined;
  return { indent, ticks, info: line.slice(indent + ticks).trim() };
}

function leadingSpaces(line: string): number {
  let count = 0;
  while (line[count] === ' ') count += 1;
  return count;
}

/** The kind the marker above a fence names (blank lines between are allowed); a whole bots.yaml without one. */
function markerAbove(lines: string[], fence: number, where: string): YamlKind {
  let above = fence - 1;
  while (above >= 0 && lines[above]!.trim() === '') above -= 1;
  const line = above >= 0 ? lines[above]!.trim() : '';
  if (!line.startsWith('<!-- yaml:') || !line.endsWith('-->')) return 'bots.yaml';
  const said = line.slice('<!-- yaml:'.length, -'-->'.length).trim();
  for (const [marker, kind] of Object.entries(MARKERS)) {
    if (said === marker || said.startsWith(`${marker} `)) return kind;
  }
  throw new Error(`${where}: unknown marker "${line}" (one of: ${Object.keys(MARKERS).map((m) => `<!-- yaml: ${m} -->`).join(', ')})`);
}

/** The environment variables a text names as `${NAME}` or `${NAME:-default}`. */
export function variablesOf(text: string): string[] {
  const names = new Set<string>();
  for (let at = text.indexOf('${'); at !== -1; at = text.indexOf('${', at + 2)) {
    let end = at + 2;
    while (end < text.length && /[A-Za-z0-9_]/.test(text[end]!)) end += 1;
    if (end > at + 2) names.add(text.slice(at + 2, end));
  }
  return [...names];
}
