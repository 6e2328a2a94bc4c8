import { badRequest } from './errors.js';

/**
 * The query language of `searcharchives` (spec 4.2 "Search archives", our decisions in docs/protocol.md):
 *
 * - `word`: the text has a word that starts with it (prefix match), ignoring case and accents;
 * - `"a quoted phrase"`: those whole words, consecutive; a plain token that holds punctuation
 *   (`e-mail`, `v2.1`) is read as a phrase of its parts too;
 * - `#tag`: the message carries that hashtag (case-insensitive);
 * - `posterid:<user_id>`: the message was posted by that user (exact, case-sensitive id);
 * - `-#tag`: refused, the spec marks it not yet implemented.
 *
 * Every term must hold (AND). A query with no text terms matches every message its filters allow.
 */
export interface SearchQuery {
  /** Normalized words, each matched as a word prefix. */
  words: string[];
  /** Normalized word sequences, matched as consecutive whole words. */
  phrases: string[][];
  /** Hashtag names, lower case, without `#`. */
  hashtags: string[];
  posterIds: string[];
}

/** A word of the searched text: its normalized form and where it sits in the original text. */
export interface WordToken {
  word: string;
  start: number;
  end: number;
}

export const EXCLUDE_HASHTAG_NOT_IMPLEMENTED = '-#tag (exclude hashtag) is not yet implemented';

// Combining marks belong to the word they follow, so a decomposed `nai\u0308ve` stays one word.
const WORD = /[\p{L}\p{N}_][\p{L}\p{M}\p{N}_]*/gu;
const POSTER_PREFIX = 'posterid:';

/** Folds case and accents so `Café` and `cafe` compare equal. */
export function normalizeWord(word: string): string {
  // Most words are ASCII, where folding is only lower-casing; Unicode normalization is the slow part.
  if (/^[\x00-\x7f]*$/.test(word)) return word.toLowerCase();
  return word.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase();
}

export function tokenizeWords(text: string): WordToken[] {
  const tokens: WordToken[] = [];
  for (const match of text.matchAll(WORD)) {
    const word = normalizeWord(match[0]);
    if (word) tokens.push({ word, start: match.index, end: match.index + match[0].length });
  }
  return tokens;
}

/** Splits a query into raw tokens: runs of non-space, or a `"..."` run (an unclosed quote ends the query). */
function rawTokens(q: string): Array<{ text: string; quoted: boolean }> {
  const tokens: Array<{ text: string; quoted: boolean }> = [];
  let i = 0;
  while (i < q.length) {
    if (/\s/.test(q[i]!)) {
      i += 1;
      continue;
    }
    const quoted = q[i] === '"';
    // `posterid:"..."` takes a quoted value, so the quote run starts after the prefix.
    const prefixQuoted = !quoted && q.slice(i, i + POSTER_PREFIX.length + 1).toLowerCase() === `${POSTER_PREFIX}"`;
    if (quoted || prefixQuoted) {
      const open = quoted ? i : i + POSTER_PREFIX.length;
      const close = q.indexOf('"', open + 1);
      const end = close < 0 ? q.length : close;
      const value = q.slice(open + 1, end);
      tokens.push({ text: quoted ? value : q.slice(i, open) + value, quoted });
      i = end + 1;
      continue;
    }
    let end = i;
    while (end < q.length && !/\s/.test(q[end]!)) end += 1;
    tokens.push({ text: q.slice(i, end), quoted: false });
    i = end;
  }
  return tokens;
}

const SENTENCE_PUNCTUATION = new Set(['.', ',', ';', ':', '!', '?']);

/**
 * `text` without the sentence punctuation at its end: what `/[.,;:!?]+$/` removes, by a scan from the
 * end (that expression, tried from every position of a long run of dots, takes time in its square).
 */
export function withoutTrailingPunctuation(text: string): string {
  let end = text.length;
  while (end > 0 && SENTENCE_PUNCTUATION.has(text[end - 1]!)) end -= 1;
  return text.slice(0, end);
}

export function parseSearchQuery(q: string): SearchQuery {
  const query: SearchQuery = { words: [], phrases: [], hashtags: [], posterIds: [] };
  for (const { text, quoted } of rawTokens(q)) {
    if (!quoted && text.startsWith('-#')) throw badRequest(EXCLUDE_HASHTAG_NOT_IMPLEMENTED);
    if (!quoted && text.startsWith('#') && text.length > 1) {
      // Trailing punctuation is the sentence's, not the tag's: `#urgent,` means #urgent.
      const tag = withoutTrailingPunctuation(text.slice(1)).toLowerCase();
      if (tag) query.hashtags.push(tag);
      continue;
    }
    if (!quoted && text.toLowerCase().startsWith(POSTER_PREFIX)) {
      const id = text.slice(POSTER_PREFIX.length);
      if (!id) throw badRequest('invalid posterid');
      query.posterIds.push(id);
      continue;
    }
    const words = tokenizeWords(text).map((t) => t.word);
    if (words.length === 0) continue;
    if (quoted || words.length > 1) query.phrases.push(words);
    else query.words.push(words[0]!);
  }
  return query;
}

export function hasTextTerms(query: SearchQuery): boolean {
  return query.words.length > 0 || query.phrases.length > 0;
}

/**
 * A fast, exact pre-check: in ASCII text each word folds by lower-casing alone, so a term that is not
 * even a substring of the lower-cased text cannot match. Non-ASCII text is left to the full match.
 */
export function couldMatch(query: SearchQuery, texts: readonly string[]): boolean {
  if (!texts.every((text) => /^[\x00-\x7f]*$/.test(text))) return true;
  const folded = texts.map((text) => text.toLowerCase());
  const present = (word: string): boolean => folded.some((text) => text.includes(word));
  return query.words.every(present) && query.phrases.every((phrase) => phrase.every(present));
}

/**
 * Where a term occurs in one token list: the index of the first token of each occurrence (overlapping
 * ones included). A one-word term matches as a prefix; a phrase (whole words) is found with
 * Knuth-Morris-Pratt, so a long phrase over a repetitive body costs the tokens plus the phrase, not
 * their product (#31).
 */
function occurrences(tokens: readonly WordToken[], term: readonly string[], prefix: boolean): number[] {
  const found: number[] = [];
  const n = term.length;
  if (n === 1 && prefix) {
    const word = term[0]!;
    tokens.forEach((token, i) => {
      if (token.word.startsWith(word)) found.push(i);
    });
    return found;
  }
  // failure[k]: the length of the longest proper prefix of term[0..k] that is also its suffix.
  const failure = new Array<number>(n).fill(0);
  for (let k = 1, matched = 0; k < n; k += 1) {
    while (matched > 0 && term[k] !== term[matched]) matched = failure[matched - 1]!;
    if (term[k] === term[matched]) matched += 1;
    failure[k] = matched;
  }
  let matched = 0;
  for (let i = 0; i < tokens.length; i += 1) {
    const word = tokens[i]!.word;
    while (matched > 0 && word !== term[matched]) matched = failure[matched - 1]!;
    if (word === term[matched]) matched += 1;
    if (matched === n) {
      found.push(i - n + 1);
      matched = failure[n - 1]!;
    }
  }
  return found;
}

export interface TextMatch {
  /** Occurrences of all text terms together: the `relevance` sort key. */
  hits: number;
  /** Offset in the body text of the earliest hit there, for the summary; undefined when none is in the body. */
  firstBodyHit: number | undefined;
}

/**
 * Matches the query's text terms against a message's subject and body words. Each term must occur in
 * at least one of the two; undefined when one does not.
 */
export function matchText(query: SearchQuery, subject: readonly WordToken[], body: readonly WordToken[]): TextMatch | undefined {
  const terms: Array<{ term: readonly string[]; prefix: boolean }> = [
    ...query.words.map((word) => ({ term: [word], prefix: true })),
    ...query.phrases.map((phrase) => ({ term: phrase, prefix: false })),
  ];
  let hits = 0;
  let firstBodyHit: number | undefined;
  for (const { term, prefix } of terms) {
    const inSubject = occurrences(subject, term, prefix);
    const inBody = occurrences(body, term, prefix);
    if (inSubject.length + inBody.length === 0) return undefined;
    hits += inSubject.length + inBody.length;
    const first = inBody[0];
    if (first !== undefined) {
      const offset = body[first]!.start;
      if (firstBodyHit === undefined || offset < firstBodyHit) firstBodyHit = offset;
    }
  }
  return { hits, firstBodyHit };
}
