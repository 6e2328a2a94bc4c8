import { FileRefusedError } from '../media/file-refused.js';
import type { Logger } from 'pino';
import type { Attachment, FileBytes, IncomingFile, RefusedFile } from '../media/attachment.js';
import { sizeInWords } from '../media/file-lines.js';
import { bareType, claimsImage, deniedEntry, executableTypeOf, HEAD_BYTES, imageTypeOf } from '../media/file-checks.js';
import { FileTooBigError, type MediaStore, type StoredFileMeta } from '../media/media-store.js';

/** What a file said on a side must meet (bots.yaml `media:`). */
export interface FileLimits {
  /** Bytes. */
  maxSize: number;
  /** Name endings (`.exe`) and content types refused. */
  denyTypes: readonly string[];
  /** A download that gives no bytes for this long is refused (ms). */
  stallMs: number;
}

/** Why a file was refused: the label of `groupwire_files_refused_total{reason}` (docs/operations.md). */
export const REFUSAL_KINDS = ['too_big', 'denied_type', 'size_mismatch', 'stalled', 'not_an_image', 'read_failed', 'no_store'] as const;
export type RefusalKind = typeof REFUSAL_KINDS[number];

/** What the intake counts for /metrics (docs/operations.md). */
export interface FileCounts {
  stored: number;
  bytesStored: number;
  refused: Map<RefusalKind, number>;
}

/** A file refused while its bytes came in: the kind (for /metrics) and the reason in words (for the other sides). */
class Refusal extends Error {
  constructor(readonly kind: RefusalKind, readonly reason: string) {
    super(reason);
  }
}

/** Types a stored file may carry (a token/token type); anything else is kept as application/octet-stream. */
const CONTENT_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
/** The longest name kept (characters). */
const MAX_NAME = 200;

/**
 * The gateway's intake of files (docs/gateways.md "Files"): each file a relay hands on with a line is
 * read once, through the relay's `open` (its platform's own file API), into the media store, before the
 * line goes on. Refused, with a reason in words the other sides are shown: a stated size over the cap
 * (before reading anything), a type on the deny list (by name, stated type, or what the first bytes
 * are), more bytes than the cap or than the stated size, no bytes for `stallMs` (the download is
 * aborted, so the lines behind it go on), an `image/*` whose first bytes are no image.
 */
export class FileIntake {
  readonly counts: FileCounts = { stored: 0, bytesStored: 0, refused: new Map() };

  constructor(
    private readonly store: MediaStore | undefined,
    private readonly limits: FileLimits,
    private readonly log: Logger,
  ) {}

  /**
   * Reads a line's files, all at once (so a line of several stalled files waits one stall_timeout, not
   * one each), answered in the line's order; never throws (a file that fails is refused).
   */
  async read(files: readonly IncomingFile[]): Promise<{ files: Attachment[]; refused: RefusedFile[] }> {
    const outcomes = await Promise.all(files.map(async (file): Promise<Attachment | RefusedFile> => {
      const name = fileName(file.name);
      try {
        const attachment = await this.readOne(file, name);
        this.counts.stored += 1;
        this.counts.bytesStored += attachment.size;
        return attachment;
      } catch (error) {
        const refusal = error instanceof Refusal ? error
          : error instanceof FileRefusedError ? new Refusal(error.kind, error.reason) : new Refusal('read_failed', 'could not be read');
        if (!(error instanceof Refusal)) this.log.warn({ err: error, file: name }, 'a file could not be read from its side; the line goes on without it');
        else this.log.info({ file: name, reason: refusal.reason }, 'a file was refused');
        this.counts.refused.set(refusal.kind, (this.counts.refused.get(refusal.kind) ?? 0) + 1);
        return { name, reason: refusal.reason };
      }
    }));
    const taken: Attachment[] = [];
    const refused: RefusedFile[] = [];
    for (const outcome of outcomes) {
      if ('reason' in outcome) refused.push(outcome);
      else taken.push(outcome);
    }
    return { files: taken, refused };
  }

  private async readOne(file: IncomingFile, name: string): Promise<Attachment> {
    const { maxSize, denyTypes, stallMs } = this.limits;
    if (!this.store) throw new Refusal('no_store', 'files are not kept here');
    const stated = bareType(file.contentType);
    const denied = deniedEntry(denyTypes, name, stated);
    if (denied) throw new Refusal('denied_type', `type not allowed (${denied})`);
    const said = typeof file.size === 'number' && Number.isFinite(file.size) && file.size >= 0 ? file.size : undefined;
    if (said !== undefined && said > maxSize) throw new Refusal('too_big', `too big (${sizeInWords(said)}, limit ${sizeInWords(maxSize)})`);

    // No bytes for stallMs (while opening, or between chunks): aborted, and the wait for them ends at
    // once. Only the waits on the platform are timed, not our own writes to disk.
    const controller = new AbortController();
    const stalled = new Refusal('stalled', `download stalled (no bytes for ${stallMs / 1000} s)`);
    let timer: NodeJS.Timeout | undefined;
    let wake: ((reason: unknown) => void) | undefined;
    controller.signal.addEventListener('abort', () => wake?.(controller.signal.reason), { once: true });
    const orStall = <T>(step: () => Promise<T>): Promise<T> => new Promise<T>((resolve, reject) => {
      if (controller.signal.aborted) return reject(controller.signal.reason);
      wake = reject;
      timer = setTimeout(() => controller.abort(stalled), stallMs);
      step().then(resolve, reject);
    }).finally(() => clearTimeout(timer));
    let meta: StoredFileMeta | undefined;
    const checkHead = (head: Uint8Array) => {
      meta = this.metaOf(name, stated, head);
    };
    try {
      const bytes = await orStall(() => file.open(controller.signal));
      const checked = async function* (): AsyncGenerator<Uint8Array> {
        const iterator = iterate(bytes);
        let size = 0;
        let head: Uint8Array = new Uint8Array(0);
        try {
          for (;;) {
            const step = await orStall(() => iterator.next());
            if (step.done) break;
            const chunk = typeof step.value === 'string' ? Buffer.from(step.value) : step.value;
            size += chunk.byteLength;
            if (said !== undefined && size > said) throw new Refusal('size_mismatch', `size not as stated (said ${sizeInWords(said)}, sent more)`);
            if (size > maxSize) throw new Refusal('too_big', `too big (over the ${sizeInWords(maxSize)} limit)`);
            if (!meta) {
              head = concatHead(head, chunk);
              if (head.length >= HEAD_BYTES) checkHead(head);
            }
            yield chunk;
          }
          if (!meta) checkHead(head);
        } finally {
          // Tells a Readable or web stream still open to let go (a refusal mid-file, a stall).
          void iterator.return?.()?.catch?.(() => undefined);
        }
      };
      return await this.store.put(checked(), () => meta!, maxSize);
    } catch (error) {
      if (error instanceof FileTooBigError) throw new Refusal('too_big', `too big (over the ${sizeInWords(maxSize)} limit)`);
      if (controller.signal.aborted && controller.signal.reason === stalled) throw stalled;
      throw error;
    } finally {
      clearTimeout(timer);
      wake = undefined;
      controller.abort();
    }
  }

  /** The type the file is kept with, from what it says and what its first bytes are; refuses an executable or a false image. */
  private metaOf(name: string, stated: string, head: Uint8Array): StoredFileMeta {
    const executable = executableTypeOf(head);
    const denied = executable && deniedEntry(this.limits.denyTypes, '', executable);
    if (denied) throw new Refusal('denied_type', `type not allowed (${denied})`);
    const image = imageTypeOf(head);
    // SVG can carry script: kept as a file, never shown as an image.
    const svg = stated === 'image/svg+xml';
    if (claimsImage(stated) && !svg && !image) throw new Refusal('not_an_image', `not an image (said ${stated})`);
    const contentType = image ?? (CONTENT_TYPE.test(stated) ? stated : 'application/octet-stream');
    return { name, contentType, image: image !== undefined };
  }
}

/** A name safe to keep and show: no control characters or path separators, at most MAX_NAME characters, never empty. */
export function fileName(raw: string | undefined): string {
  let name = '';
  for (const char of String(raw ?? '')) {
    const code = char.codePointAt(0)!;
    name += code < 0x20 || (code >= 0x7f && code <= 0x9f) || char === '/' || char === '\\' ? '_' : char;
    if (name.length >= MAX_NAME) break;
  }
  name = name.trim();
  return name === '' || name === '.' || name === '..' ? 'file' : name;
}

/** The first HEAD_BYTES bytes, from the chunks so far. */
function concatHead(head: Uint8Array, chunk: Uint8Array): Uint8Array {
  const more = chunk.subarray(0, HEAD_BYTES - head.length);
  const joined = new Uint8Array(head.length + more.length);
  joined.set(head);
  joined.set(more, head.length);
  return joined;
}

/** An iterator over any of the shapes a platform's file API gives (a Readable, a web stream, an async iterable). */
function iterate(bytes: FileBytes): AsyncIterator<Uint8Array | string> {
  return (bytes as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]();
}
