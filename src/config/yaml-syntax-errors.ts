import type { YAMLError } from 'yaml';

/**
 * A YAML syntax error said in plain words; the library's own wording follows in parentheses, since
 * it is what a search finds. The parser often reports one mistake several times (an over-indented
 * line is a bad indent, a multi-line key and an unclosed map at once): the caller keeps the first
 * of each line.
 */
export function plainYamlError(error: YAMLError): string {
  const original = error.message.split('\n')[0]!;
  return `${plainWords(error.code, original)} (yaml: ${original})`;
}

/**
 * Whether the parser's error says a line is not at its column (yaml-indentation.ts then finds which
 * line); `orConsequence` also counts the errors such a line brings along (a key "without a colon",
 * unexpected text), left out once the line is found.
 */
export function isIndentationError(error: YAMLError, orConsequence = false): boolean {
  switch (error.code) {
    case 'BAD_INDENT':
      return !/^Flow (map|sequence)/.test(error.message);
    case 'BLOCK_AS_IMPLICIT_KEY':
      return true;
    case 'MULTILINE_IMPLICIT_KEY':
    case 'UNEXPECTED_TOKEN':
      return orConsequence;
    case 'MISSING_CHAR':
      return /without - indicator/.test(error.message) || (orConsequence && /followed by map values/.test(error.message));
    default:
      return false;
  }
}

function plainWords(code: string, message: string): string {
  switch (code) {
    case 'BAD_INDENT':
      if (/^Flow (map|sequence)/.test(message)) {
        return `a ${message.startsWith('Flow map') ? '{' : '['} opened above is not closed, or the lines inside it are not indented enough`;
      }
      return 'the indentation is off: the keys of one map, and the items of one list, must start at the same column';
    case 'MULTILINE_IMPLICIT_KEY':
      // Alone, this is a line without a colon that the parser joins with the next into one long key.
      return 'a key without a colon (or a key split over two lines): write "key: value" on one line';
    case 'BLOCK_AS_IMPLICIT_KEY':
      return 'the indentation is off: the line below is indented deeper than this one, yet this one has a value ' +
        '(indent keys of the same map alike; quote a value that contains ": ")';
    case 'TAB_AS_INDENT':
      return 'a tab is used to indent: YAML indents with spaces only';
    case 'MISSING_CHAR':
      if (/quote/.test(message)) return 'a quoted value is not closed: its closing quote is missing';
      if (/followed by map values/.test(message)) return 'a key without a colon: write "key: value"';
      // A line between a list item's keys and the list's own column: neither in the item's map nor a new item.
      if (/without - indicator/.test(message)) {
        return 'the indentation is off: this line is neither at the column of the list item\'s keys above nor a new item ("- ")';
      }
      return 'a closing character is missing';
    case 'DUPLICATE_KEY':
      return 'this key is given twice in the same map';
    case 'BAD_DQ_ESCAPE':
      return 'an unknown backslash escape in a double-quoted value (use single quotes, or write \\\\ for a backslash)';
    case 'BAD_SCALAR_START':
      return 'a value cannot start with this character unless it is quoted: put the value in quotes';
    case 'MULTIPLE_DOCS':
      return 'the file holds more than one YAML document (a --- line); it must be one';
    case 'BLOCK_IN_FLOW':
      return 'an indented list or map inside { } or [ ]: write it inline, or leave the braces out';
    case 'UNEXPECTED_TOKEN':
      return 'unexpected text here: a list item or value where a key was expected (check the indentation)';
    case 'BAD_ALIAS':
    case 'ALIAS_PROPS':
      return 'an alias (*name) that is not valid here';
    default:
      return 'this is not valid YAML';
  }
}
