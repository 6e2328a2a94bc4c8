import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './usage-error.js';

/** A usage mistake in a subcommand: the hint points at that command's help (`groupwire archive download --help`). */
export class CommandUsageError extends UsageError {
  constructor(message: string, readonly command: string) {
    super(message);
  }
}

/** Runs a command, labelling its usage mistakes with the command so the hint names the right --help. */
export async function inCommand<T>(command: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof UsageError && !(error instanceof CommandUsageError)) throw new CommandUsageError(error.message, command);
    throw error;
  }
}

/** node:util parseArgs, strict, with its complaints turned into usage errors. */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs<T>({ strict: true, ...config });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** `--limit`: an integer from 1 to 100 (spec 4.0), or undefined when not given. */
export function parseLimit(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const limit = Number(text);
  if (!/^\d+$/.test(text) || limit < 1 || limit > 100) throw new UsageError(`--limit must be an integer from 1 to 100, got ${text}`);
  return limit;
}

/** The group a command needs (`--group NAME`). */
export function requireGroup(group: string | undefined): string {
  if (group === undefined || group === '') throw new UsageError('--group NAME is required');
  return group;
}

/** One of a fixed set of values, or undefined when not given. */
export function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got ${value}`);
  return value as T;
}
