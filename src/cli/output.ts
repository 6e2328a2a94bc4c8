import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import { htmlToLine } from '../api/html-text.js';
import { explainError, GroupsError, TransportError, UnauthorizedError } from '../api/index.js';
import { isCertificateProblem } from '../api/retry.js';
import { demoUnreachable } from './service-address.js';
import { terminalBlock, terminalJson, terminalText } from './terminal-text.js';

/** Exit codes of every command. */
export const EXIT = { ok: 0, error: 1, usage: 2 } as const;

// Passwords and tokens of this run: never printed, whatever message they might end up in.
const secrets = new Set<string>();

export function registerSecret(secret: string | undefined): void {
  if (secret) secrets.add(secret);
}

export function redact(text: string): string {
  let result = text;
  // Longest first, so a secret that contains a shorter one is hidden whole.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) result = result.split(secret).join('***');
  return result;
}

/** Parses JSON keeping every number's text (ids above 2^53 stay exact). */
export function parseJsonLossless(text: string): unknown {
  return parseLossless(text);
}

/**
 * JSON with 2-space indentation; numbers parsed losslessly print as the text they arrived as. DEL, the
 * C1 and the bidi controls are written as `\uXXXX` (the same value), so the JSON is safe on a terminal.
 */
export function formatJson(value: unknown): string {
  return `${terminalJson(stringifyLossless(value, undefined, 2) ?? 'null')}\n`;
}

/**
 * Every command prints through these two: what they print may hold text from the service or from
 * files, so every control but LF and TAB, and every bidi control, is shown as a code (terminal-text.ts).
 */
export function writeOut(text: string): void {
  process.stdout.write(terminalBlock(text));
}

export function writeErr(text: string): void {
  process.stderr.write(redact(terminalBlock(text)));
}

/** Prints an error of a client command on stderr and answers the exit code. */
export function reportError(error: unknown): number {
  writeErr(`${describeError(error).map((line) => `groupwire: ${line}`).join('\n')}\n`);
  return EXIT.error;
}

function describeError(error: unknown): string[] {
  const notRunning = demoUnreachable(error);
  if (notRunning) return [notRunning];
  if (error instanceof TransportError) {
    const hint = isCertificateProblem(error.cause)
      ? ['the TLS certificate is not trusted: set GROUPWIRE_CA_FILE (or --ca-file) to the service\'s CA file']
      : [];
    return [error.message, ...hint];
  }
  if (error instanceof GroupsError) {
    // One sentence with the raw type and extra after it (explainError); a hint on the next line.
    const lines = [explainError(error)];
    if (error instanceof UnauthorizedError && error.twoFactorRequired) lines.push('pass --twofactor CODE');
    return lines;
  }
  return [error instanceof Error ? error.message : String(error)];
}

/** `YYYY-MM-DD hh:mm` in local time, for readable listings (the text as given when not a date). */
export function formatDate(text: unknown): string {
  const date = new Date(String(text));
  if (Number.isNaN(date.getTime())) return terminalText(String(text ?? ''));
  const two = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}`;
}


/** HTML (activity entries, chat descriptions) as one line of plain text. */
export function htmlToText(html: unknown): string {
  return terminalText(htmlToLine(String(html ?? '')));
}

/** A footer for one page of a longer list. */
export function pageFooter(list: { total_count?: unknown; has_more?: unknown; data: unknown[] }, noun: string): string {
  if (list.data.length === 0) return `No ${noun}.\n`;
  if (list.has_more !== true) return '';
  return `(${list.data.length} of ${String(list.total_count)} ${noun}; --limit takes up to 100)\n`;
}
