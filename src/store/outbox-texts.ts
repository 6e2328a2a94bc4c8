import { closeSync, readSync, rmSync, writeSync } from 'node:fs';
import { openPrivateSync } from './private-files.js';

/** Where a text lies in the side file: its JSON string's bytes (without the newline). */
interface Place {
  offset: number;
  length: number;
}

/** Bytes of texts no longer needed, beyond those still needed, before the side file is rewritten. */
const REWRITE_SLACK = 1 << 20;

let files = 0;

/**
 * The texts of the bot's queued posts far behind the head, kept on disk instead of in memory (#32 part
 * 3, "memory bounded whatever the backlog"; files storage only). The outbox's journal still holds every
 * post whole (what a crash recovers from is unchanged): the side file is a copy made to let the post's
 * text go from the heap, one JSON string a line. It is made beside the outbox and unlinked at once,
 * kept by its descriptor only: private to this process and this outbox, gone when the process ends
 * (nothing to clean up after a kill -9, nothing another open of the same outbox can disturb), and made
 * only once a text goes. A post whose text went keeps its place and fields; reading `text` reads its
 * line (a post about to be sent gets its text back for good: keep()). The file is rewritten once most
 * of it is texts no longer needed, and closed when none is.
 */
export class OutboxTexts {
  private readonly places = new Map<object, Place>();
  private bytes = 0;
  private liveBytes = 0;

  private readonly accessor: PropertyDescriptor;

  /** The side file's descriptor, while a text is on disk. */
  private fd: number | undefined;

  /** `near`: a path in the directory where the side file is made (the outbox's). */
  constructor(private readonly near: string) {
    const texts = this;
    this.accessor = {
      configurable: true,
      enumerable: true,
      get(this: object) {
        return texts.read(this);
      },
      set(this: { text: string }, value: string) {
        texts.keep(this, value);
      },
    };
  }

  /** Posts whose text is on disk only. */
  get onDisk(): number {
    return this.places.size;
  }

  /** The side file's size: the texts on disk, and those no longer needed until it is rewritten. */
  get fileBytes(): number {
    return this.bytes;
  }

  /** Writes the item's text to the side file and lets it go from memory; `item.text` reads it back. */
  offload(item: { text: string }): void {
    if (this.places.has(item)) return;
    const line = Buffer.from(`${JSON.stringify(item.text)}\n`, 'utf8');
    this.fd ??= this.create();
    this.write(this.fd, line, this.bytes);
    const place = { offset: this.bytes, length: line.length - 1 };
    this.bytes += place.length + 1;
    this.liveBytes += place.length + 1;
    this.places.set(item, place);
    // Redefined in place: the property keeps its position (the journal's lines read the same). One
    // accessor pair for all posts (not closures per post): they share a hidden class, small and fast.
    Object.defineProperty(item, 'text', this.accessor);
    if (this.bytes - this.liveBytes > Math.max(REWRITE_SLACK, this.liveBytes)) this.rewrite();
  }

  /** The item's text is in memory again (read back, or `value`): a post about to be sent, changed, or gone from the outbox. */
  keep(item: { text: string }, value?: string): void {
    const place = this.places.get(item);
    if (!place) return;
    const text = value ?? this.read(item);
    this.places.delete(item);
    this.liveBytes -= place.length + 1;
    Object.defineProperty(item, 'text', { configurable: true, enumerable: true, writable: true, value: text });
    if (this.places.size === 0 && this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
      this.bytes = 0;
      this.liveBytes = 0;
    }
  }

  /** A new side file, unlinked at once: only its descriptor holds it. */
  private create(): number {
    files += 1;
    const path = `${this.near}.texts.${process.pid}.${files}`;
    const fd = openPrivateSync(path, 'w+');
    rmSync(path, { force: true });
    return fd;
  }

  private write(fd: number, data: Buffer, position: number): void {
    let written = 0;
    while (written < data.length) written += writeSync(fd, data, written, data.length - written, position + written);
  }

  private read(item: object, fd = this.fd!): string {
    const place = this.places.get(item)!;
    const buffer = Buffer.allocUnsafe(place.length);
    let read = 0;
    while (read < place.length) {
      const got = readSync(fd, buffer, read, place.length - read, place.offset + read);
      if (got === 0) throw new Error('a queued post\'s text is cut short in its side file');
      read += got;
    }
    return JSON.parse(buffer.toString('utf8')) as string;
  }

  /** Copies the texts still needed into a new side file, a chunk at a time, and points their posts at it. */
  private rewrite(): void {
    const old = this.fd!;
    const fd = this.create();
    const moved = new Map<object, Place>();
    let bytes = 0;
    let chunk: Buffer[] = [];
    let chunkStart = 0;
    let chunkBytes = 0;
    for (const [item, place] of this.places) {
      const line = Buffer.from(`${JSON.stringify(this.read(item, old))}\n`, 'utf8');
      moved.set(item, { offset: bytes, length: place.length });
      chunk.push(line);
      chunkBytes += line.length;
      bytes += line.length;
      if (chunkBytes >= 1 << 20) {
        this.write(fd, Buffer.concat(chunk), chunkStart);
        chunk = [];
        chunkStart = bytes;
        chunkBytes = 0;
      }
    }
    if (chunk.length > 0) this.write(fd, Buffer.concat(chunk), chunkStart);
    closeSync(old);
    this.fd = fd;
    for (const [item, place] of moved) this.places.set(item, place);
    this.bytes = bytes;
    this.liveBytes = bytes;
  }
}
