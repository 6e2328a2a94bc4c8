/**
 * Where an indentation mistake in block YAML really is. The parser reports an item indented too little
 * where its consequences show (often at the next item, which may be the file's last line); this scan
 * follows the columns line by line and names the first line that fits no open map or list, in words.
 * It is run only on a file the parser refused for its indentation, and gives up (undefined) on what it
 * does not follow (explicit `?` keys, several documents, tabs): the parser's report then stands.
 */

export interface IndentationMistake {
  line: number;
  col: number;
  message: string;
}

type Kind = 'map' | 'seq';

interface Level {
  col: number;
  kind: Kind;
  line: number;
  /** A list at the column of the key it belongs to (`chats:` then `- ...` at the same column). */
  compact?: boolean;
}

/** What starts at a column of a line: a list item's dash, a key, or a value. */
interface Token {
  kind: Kind | 'value';
  col: number;
  key?: string;
}

/** A line's tokens, and what its last one leaves open: a child block, a block scalar, a flow or quote. */
/** The last line with content: what it held, and the levels it closed by being less indented. */
interface Previous {
  line: number;
  parsed: ParsedLine;
  ind: number;
  closed: Level[];
}

interface ParsedLine {
  tokens: Token[];
  opens?: 'child' | 'block-scalar' | 'flow' | 'quote';
  /** For 'flow': how many brackets stay open; for 'quote': the quote character. */
  flowDepth?: number;
  quote?: string;
}

class GiveUp extends Error {}

export function findIndentationMistake(text: string): IndentationMistake | undefined {
  try {
    return scan(text.split(/\r?\n/));
  } catch (error) {
    if (error instanceof GiveUp) return undefined;
    throw error;
  }
}

function scan(lines: string[]): IndentationMistake | undefined {
  const levels: Level[] = [];
  let pending: { col: number; kind: 'key' | 'item' } | undefined;
  let skip: { kind: 'block-scalar'; ownerCol: number } | { kind: 'flow'; depth: number } | { kind: 'quote'; quote: string } | undefined;
  let previous: Previous | undefined;
  for (let index = 0; index < lines.length; index += 1) {
    const text = lines[index]!;
    const ind = indentation(text);
    const content = text.slice(ind);
    if (skip?.kind === 'block-scalar') {
      if (content === '' || ind > skip.ownerCol) continue;
      skip = undefined;
    } else if (skip?.kind === 'flow') {
      const depth = skip.depth + flowBalance(content, 0);
      skip = depth > 0 ? { kind: 'flow', depth } : undefined;
      continue;
    } else if (skip?.kind === 'quote') {
      if (closesQuote(content, skip.quote)) skip = undefined;
      continue;
    }
    if (content === '' || content.startsWith('#')) continue;
    if (text[ind] === '\t' || /^(---|\.\.\.)(\s|$)/.test(content) || content.startsWith('? ') || content.startsWith('%')) throw new GiveUp();
    const parsed = parseLine(text, ind);
    const first = parsed.tokens[0]!;
    const line = index + 1;
    let placed = false;
    const closed: Level[] = [];
    if (pending) {
      const opened = pending;
      pending = undefined;
      if (ind > opened.col || (ind === opened.col && opened.kind === 'key' && first.kind === 'seq')) {
        if (first.kind !== 'value') levels.push({ col: ind, kind: first.kind, line, compact: ind === opened.col });
        placed = true;
      }
    }
    if (!placed) {
      while (levels.length > 0 && (levels.at(-1)!.col > ind || (levels.at(-1)!.col === ind && levels.at(-1)!.compact && first.kind === 'map'))) {
        closed.push(levels.pop()!);
      }
      // The list (or map) this line was most likely meant to continue: of its kind, the nearest in column.
      const popped = [...closed, ...levels.slice(-1)].filter((level) => level.kind === first.kind && level.col !== ind)
        .sort((a, b) => Math.abs(a.col - ind) - Math.abs(b.col - ind))[0];
      const top = levels.at(-1);
      if (!top) {
        if (first.kind !== 'value') levels.push({ col: ind, kind: first.kind, line });
      } else if (top.col === ind) {
        if (first.kind !== top.kind) return misplaced(line, first, top, popped);
      } else if (first.kind === 'value' && previous && previous.parsed.tokens.at(-1)?.kind === 'value') {
        // A plain value going on over a second line, deeper than its key: YAML allows it.
        previous = { line, parsed, ind: previous.ind, closed: [] };
        continue;
      } else {
        return tooDeepOrBetween(lines, line, ind, first, top, popped, previous);
      }
    }
    // The rest of the line: `- key: value` opens a list item and its map; `- - x` a list in a list.
    for (const token of parsed.tokens.slice(1)) if (token.kind !== 'value') levels.push({ col: token.col, kind: token.kind, line });
    const last = parsed.tokens.at(-1)!;
    if (parsed.opens === 'child') pending = { col: last.col, kind: last.kind === 'seq' ? 'item' : 'key' };
    else if (parsed.opens === 'block-scalar') skip = { kind: 'block-scalar', ownerCol: last.col };
    else if (parsed.opens === 'flow') skip = { kind: 'flow', depth: parsed.flowDepth! };
    else if (parsed.opens === 'quote') skip = { kind: 'quote', quote: parsed.quote! };
    previous = { line, parsed, ind, closed };
  }
  return undefined;
}

/** A key where the map's keys are a list's items, or a list item among a map's keys. */
function misplaced(line: number, first: Token, top: Level, popped: Level | undefined): IndentationMistake {
  const at = { line, col: first.col + 1 };
  if (first.kind === 'seq' && popped?.kind === 'seq') {
    return { ...at, message: `this list item starts at column ${first.col + 1}, but the items of its list above at column ${popped.col + 1} (line ${popped.line}): indent it like them` };
  }
  if (first.kind === 'value' && top.kind === 'map') {
    return { ...at, message: `a line without a key among the keys of a map (they start at column ${top.col + 1}, line ${top.line}): write "key: value"` };
  }
  if (first.kind === 'seq') {
    return { ...at, message: `a list item among the keys of a map (they start at column ${top.col + 1}, line ${top.line}): a list goes under a key with no value, as "key:" then its items` };
  }
  return { ...at, message: `${first.kind === 'map' ? `the key '${first.key}'` : 'this line'} starts at the column of the list's items (column ${top.col + 1}, line ${top.line}): indent it under its item, or start a new item with "- "` };
}

/**
 * A line deeper than the level it falls in (no key above it left open), or between two levels. Right
 * after a list item's first line (`- use: logger`), the item and the line disagree: the item is the
 * one off when the next item of its list sits as far in as this line does (the item was indented too
 * little, or too much), else this line is.
 */
function tooDeepOrBetween(lines: string[], line: number, ind: number, first: Token, top: Level, popped: Level | undefined,
  previous: Previous | undefined): IndentationMistake {
  const itemMap = previous?.parsed.tokens.find((token, position) => position > 0 && token.kind === 'map' && previous.parsed.tokens[position - 1]!.kind === 'seq');
  if (previous && itemMap && top.col === itemMap.col && top.line === previous.line) {
    const dash = previous.parsed.tokens.find((token) => token.kind === 'seq')!;
    const shift = ind - itemMap.col;
    const next = nextLowerItem(lines, line, ind);
    if (next && next.col === dash.col + shift) {
      return { line: previous.line, col: dash.col + 1, message: `this list item is indented ${shift > 0 ? 'too little' : 'too much'}: ` +
        `its next line (${line}) and the next item of its list (line ${next.line}) are ${Math.abs(shift)} column${Math.abs(shift) === 1 ? '' : 's'} further ${shift > 0 ? 'in' : 'out'}: indent it like them` };
    }
    return { line, col: ind + 1, message: `${first.key ? `the key '${first.key}'` : 'this line'} is indented deeper than '${itemMap.key}', the first key of its list item ` +
      `(line ${previous.line}, column ${itemMap.col + 1}): the keys of one item start at the same column` };
  }
  const what = first.kind === 'seq' ? 'this list item' : first.key ? `the key '${first.key}'` : 'this line';
  // The line above is a list item that left its list for an outer one, and this line still belongs
  // where it came from: that item is the one indented too little.
  const left = previous?.parsed.tokens[0]!.kind === 'seq' && previous.closed.some((level) => level.col === ind)
    ? previous.closed.filter((level) => level.kind === 'seq').at(-1) : undefined;
  if (previous && left) {
    return { line: previous.line, col: previous.ind + 1, message: `this list item starts at column ${previous.ind + 1}, but the items of its list above at ` +
      `column ${left.col + 1} (line ${left.line}), and the next line (${line}) still belongs with them: indent it like them` };
  }
  if (popped && popped.kind === first.kind) {
    return { line, col: ind + 1, message: `${what} starts at column ${ind + 1}, but the ${first.kind === 'seq' ? 'items of its list' : 'keys of its map'} above at column ${popped.col + 1} (line ${popped.line}): indent it like them` };
  }
  return { line, col: ind + 1, message: `${what} is indented deeper than the line above allows (its ${top.kind === 'seq' ? 'list\'s items' : 'map\'s keys'} start at column ${top.col + 1}, line ${top.line}, and no key above it is left without a value): indent it like them` };
}

/** The first list item after `line` that is less indented than `ind`, and where its dash is. */
function nextLowerItem(lines: string[], line: number, ind: number): { line: number; col: number } | undefined {
  for (let index = line; index < lines.length; index += 1) {
    const text = lines[index]!;
    const at = indentation(text);
    const content = text.slice(at);
    if (content === '' || content.startsWith('#') || at >= ind) continue;
    return content.startsWith('- ') || content === '-' ? { line: index + 1, col: at } : undefined;
  }
  return undefined;
}

function indentation(text: string): number {
  let at = 0;
  while (text[at] === ' ') at += 1;
  return at;
}

/** Reads a line from column `at`: dashes and keys, and what the value leaves open. */
function parseLine(text: string, start: number): ParsedLine {
  const tokens: Token[] = [];
  let at = start;
  for (;;) {
    if (text[at] === '-' && (at + 1 === text.length || text[at + 1] === ' ')) {
      tokens.push({ kind: 'seq', col: at });
      at += 1;
      while (text[at] === ' ') at += 1;
      if (at >= text.length || text[at] === '#') return { tokens, opens: 'child' };
      continue;
    }
    const keyEnd = keyEndAt(text, at);
    if (keyEnd === undefined) return { tokens: [...tokens, { kind: 'value', col: at }], ...valueOpens(text, at) };
    tokens.push({ kind: 'map', col: at, key: unquote(text.slice(at, keyEnd)) });
    at = keyEnd + 1;
    while (text[at] === ' ') at += 1;
    if (at >= text.length || text[at] === '#') return { tokens, opens: 'child' };
    // An anchor or tag alone before the block it names: the block is still to come.
    if ((text[at] === '&' || text[at] === '!') && !text.slice(at).includes(' ')) return { tokens, opens: 'child' };
    if (text[at] === '-' && text[at + 1] === ' ') throw new GiveUp(); // `key: - x` is not block YAML we follow
    return { tokens, ...valueOpens(text, at) };
  }
}

/** Where the colon of a key starting at `at` is, or undefined when the text there is a value. */
function keyEndAt(text: string, at: number): number | undefined {
  let end = at;
  const first = text[at];
  if (first === '"' || first === '\'') {
    end = at + 1;
    while (end < text.length && text[end] !== first) end += first === '"' && text[end] === '\\' ? 2 : 1;
    end += 1;
    return text[end] === ':' && (end + 1 === text.length || text[end + 1] === ' ') ? end : undefined;
  }
  if (first === '[' || first === '{' || first === '|' || first === '>' || first === '#') return undefined;
  for (; end < text.length; end += 1) {
    if (text[end] === ' ' && text[end + 1] === '#') return undefined;
    if (text[end] === ':' && (end + 1 === text.length || text[end + 1] === ' ')) return end;
  }
  return undefined;
}

function unquote(key: string): string {
  return key.length >= 2 && (key[0] === '"' || key[0] === '\'') ? key.slice(1, -1) : key;
}

/** A value from `at`: a block scalar indicator, a flow left open, a quote left open, or nothing open. */
function valueOpens(text: string, at: number): Omit<ParsedLine, 'tokens'> {
  const first = text[at];
  if ((first === '|' || first === '>') && /^[|>][-+0-9]*\s*(#.*)?$/.test(text.slice(at))) return { opens: 'block-scalar' };
  if (first === '[' || first === '{') {
    const depth = flowBalance(text, at);
    return depth > 0 ? { opens: 'flow', flowDepth: depth } : {};
  }
  if ((first === '"' || first === '\'') && !closesQuote(text.slice(at + 1), first)) return { opens: 'quote', quote: first };
  return {};
}

/** Brackets opened minus closed from `at`, quotes skipped. */
function flowBalance(text: string, at: number): number {
  let depth = 0;
  for (let index = at; index < text.length; index += 1) {
    const char = text[index];
    if (char === '"' || char === '\'') {
      index += 1;
      while (index < text.length && text[index] !== char) index += char === '"' && text[index] === '\\' ? 2 : 1;
    } else if (char === '[' || char === '{') depth += 1;
    else if (char === ']' || char === '}') depth -= 1;
    else if (char === '#' && text[index - 1] === ' ') break;
  }
  return depth;
}

/** Whether `text` holds the closing `quote` of a quoted value (a doubled '' or an escaped \" is not one). */
function closesQuote(text: string, quote: string): boolean {
  for (let index = 0; index < text.length; index += 1) {
    if (quote === '"' && text[index] === '\\') index += 1;
    else if (text[index] === quote) {
      if (quote === '\'' && text[index + 1] === '\'') index += 1;
      else return true;
    }
  }
  return false;
}
