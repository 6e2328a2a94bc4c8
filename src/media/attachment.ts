import type { Readable } from 'node:stream';

/**
 * Files across the gateway (docs/gateways.md "Files"). A file said on a side is read once, through that
 * platform's own authenticated file API, into the media store; every other side then gets it from the
 * store: uploaded natively where the side takes files, as a link to the store's listener elsewhere.
 */

/** The bytes of a file, as a platform's file API gives them. */
export type FileBytes = Readable | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/**
 * A file said with a line, as the origin relay offers it (`IncomingMessage.files`). `open` reads it only
 * through the platform's own authenticated file API (Slack's `url_private` with the bot token, Matrix's
 * media download, Telegram's getFile, ...): never a URL a user typed (a link in text stays text).
 */
export interface IncomingFile {
  name: string;
  /** The type the platform says it has; checked against the bytes for images. */
  contentType?: string;
  /** The size the platform says it has, when it says (a file that turns out larger is refused). */
  size?: number;
  /** Opens the file's bytes; `signal` aborts a download that stalls or runs over the cap. */
  open(signal: AbortSignal): Promise<FileBytes>;
}

/** A file kept in the media store, as every side and the logger see it (`OutgoingMessage.files`). */
export interface Attachment {
  /** The store's id: unguessable, safe in a path and a URL. */
  id: string;
  name: string;
  contentType: string;
  /** Bytes. */
  size: number;
  /** The type is an image and the bytes are one: shown inline where a side can. */
  image: boolean;
  /** The public link (media `public_url`), when the operator set one; absent otherwise. */
  url?: string;
}

/** A file that was not relayed, and why, in words for the other sides (`too big (40 MB, limit 25 MB)`). */
export interface RefusedFile {
  name: string;
  reason: string;
}

/** What relays get of the media store (`env.media`): a stored file's bytes, for a native upload. */
export interface MediaFiles {
  /** Opens a stored file. Rejects (ENOENT) once retention removed it: send the line with its link instead. */
  open(id: string): Promise<Readable>;
  /** The stored file's path on disk (for SDKs that upload only from a path). */
  pathOf(id: string): string;
}
