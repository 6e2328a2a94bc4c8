import { terminalLines } from './terminal-text.js';

/**
 * A chat message as a terminal shows it: the prefix (time, chat, name), then the text with its control
 * characters shown as codes (another member's ESC must not steer this terminal), later lines lined up
 * under the first.
 */
export function chatLine(prefix: string, text: string): string {
  return `${prefix}${terminalLines(text).join(`\n${' '.repeat(prefix.length)}`)}`;
}
