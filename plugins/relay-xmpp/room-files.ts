import type { Element } from '@xmpp/client';
import type { Logger } from 'pino';
import { failureFields, type Attachment, type IncomingFile, type MediaFiles } from '../../src/index.js';
import { discoverUpload, HttpUpload, SlotRefused, type UploadService } from './http-upload.js';

/**
 * Files in the rooms (docs/plugins/relay-xmpp.md "Files"): each session asks the server for its HTTP
 * Upload service; a gateway line's files are put there (within its max-file-size), and a URL shared in a
 * room is read as a file only when it is on that service. Everything else about a file is the caller's.
 */
export class RoomFiles {
  /** The server's upload service, as this session's discovery found it (undefined: none). */
  private service: Promise<UploadService | undefined> = Promise.resolve(undefined);
  private readonly http: HttpUpload;

  constructor(
    private readonly options: {
      domain: string;
      ask: (iq: Element) => Promise<Element>;
      media: MediaFiles;
      log: Logger;
      counters: { files_in: number };
      tls: { ca?: string; allowSelfSigned: boolean };
      prefix?: string;
      timeoutMs: number;
    },
  ) {
    this.http = new HttpUpload({
      allowSelfSigned: options.tls.allowSelfSigned, timeoutMs: options.timeoutMs,
      ...(options.tls.ca ? { ca: options.tls.ca } : {}), ...(options.prefix ? { prefix: options.prefix } : {}),
    });
  }

  /** A new session: the upload service is asked again (a file waits for the answer). */
  newSession(): void {
    this.service = discoverUpload(this.options.ask, this.options.domain).catch((error: unknown) => {
      this.options.log.warn({ ...failureFields(error) }, 'could not ask the XMPP server for its upload service: files go as links');
      return undefined;
    });
  }

  /**
   * Puts a file on the server's upload service: undefined (its link goes instead) when there is none,
   * the file is over its max-file-size, the store no longer has it, or the service refuses the slot.
   */
  async upload(file: Attachment, signal: AbortSignal): Promise<string | undefined> {
    const { log } = this.options;
    const service = await this.service;
    if (!service) return undefined;
    if (service.maxSize !== undefined && file.size > service.maxSize) {
      log.info({ size: file.size, limit: service.maxSize }, 'a file is over the XMPP upload service\'s max-file-size: its link goes instead');
      return undefined;
    }
    let bytes;
    try {
      bytes = await this.options.media.open(file.id);
    } catch (error) {
      log.warn({ ...failureFields(error) }, 'a file is no longer in the media store: its link goes instead');
      return undefined;
    }
    try {
      return await this.http.upload(this.options.ask, service, file, bytes, signal);
    } catch (error) {
      bytes.destroy();
      if (!(error instanceof SlotRefused)) throw error;
      log.warn({ size: file.size, reason: error.message }, 'the XMPP upload service refused a file: its link goes instead');
      return undefined;
    }
  }

  /** A URL shared in a room, as a file when it is on the server's own upload service (read from there alone). */
  async fileAt(url: string): Promise<IncomingFile | undefined> {
    if (!this.http.trusts(url, await this.service)) return undefined;
    this.options.counters.files_in += 1;
    const path = new URL(url).pathname;
    const last = path.slice(path.lastIndexOf('/') + 1);
    let name: string;
    try {
      name = decodeURIComponent(last);
    } catch {
      name = last;
    }
    return { name: name.trim() || 'file', open: (signal) => this.http.download(url, signal) };
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
