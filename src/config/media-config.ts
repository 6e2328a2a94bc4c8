import { z } from 'zod';

/**
 * Types refused by default (bots.yaml `media.deny_types`): executables, by content type and by name.
 * A refused file is said on the other sides ("a file was not relayed: setup.exe: type not allowed"),
 * never stored or served.
 */
export const DEFAULT_DENY_TYPES: readonly string[] = [
  '.exe', '.msi', '.bat', '.cmd', '.com', '.scr', '.ps1', '.sh', '.jar', '.apk', '.dmg', '.app',
  'application/x-msdownload', 'application/x-dosexec', 'application/x-executable', 'application/x-sh',
  'application/java-archive', 'application/vnd.android.package-archive', 'application/x-mach-binary',
];

/** 25 MB (decimal, as platforms state their limits). */
export const DEFAULT_MAX_FILE_SIZE = 25_000_000;

/** A deny_types entry: a name ending (`.exe`) or a content type (`application/x-msdownload`), lower case. */
const denyType = z.string().trim().toLowerCase().refine((value) => /^\.[a-z0-9][a-z0-9.+_-]*$/.test(value) || /^[a-z0-9][a-z0-9.+_-]*\/[a-z0-9*][a-z0-9.+_-]*$/.test(value),
  'a name ending like .exe, or a content type like application/x-msdownload');

/** A byte count; a string such as "25MB" gets the figure it means in the error. */
const byteCount = z.number({ error: (issue) => typeof issue.input === 'string'
  ? `max_size is a number of bytes (25 MB is 25000000), not ${JSON.stringify(issue.input)}` : 'expected a number of bytes' })
  .int('a whole number of bytes').positive('at least 1 byte');

/**
 * Files across the gateway (docs/gateways.md "Files", docs/bots.md `media:`): where the media store
 * keeps them, the listener that serves their links, and the limits a file said on a side must meet.
 */
export function mediaSchema(listenAddress: z.ZodType<string>) {
  return z.strictObject({
    /** The store's folder (default `<state_dir>/media`); workers may share one, like the logger's dir. */
    dir: z.string().min(1).optional(),
    /** The listener serving the files (`host:port`; port 0 takes a free port, ops.json says which). None: no listener. */
    listen: listenAddress.optional(),
    /** The base of the links (a reverse proxy or CDN in front of the listener); default `http://<listen>`. */
    public_url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// address' }).optional(),
    /** The largest file taken, in bytes (default 25 MB); a larger one is refused with a line saying so. */
    max_size: byteCount.default(DEFAULT_MAX_FILE_SIZE),
    /** Stored files older than this are removed (at start and hourly). */
    retention_days: z.number().positive().default(30),
    /** Refused types: name endings (`.exe`) and content types (`application/x-sh`); default: executables. */
    deny_types: z.array(denyType).default([...DEFAULT_DENY_TYPES]),
    /** A download that sends no bytes for this many seconds is refused (the lines behind it go on). */
    stall_timeout: z.number().positive().max(3600).default(30),
  }).prefault({});
}

export type MediaConfig = z.output<ReturnType<typeof mediaSchema>>;
