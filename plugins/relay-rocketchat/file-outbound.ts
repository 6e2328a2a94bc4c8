import { openAsBlob } from 'node:fs';
import { fileLines, type Attachment, type DurableQueue, type MediaFiles } from '../../src/index.js';
import type { RocketMessage } from './inbound.js';
import type { OutboundCounters, OutboundItem, Rendered } from './outbound.js';
import { RocketError, type RocketRest } from './rest.js';

/**
 * Where a line's files stand, in the queue's note (written with the queue's durability before the
 * step it guards): `done` files sent; the upload of the next one (`fileId`) once rooms.media took it;
 * the first message's id (the line's native id); when the line started (its messages are after that).
 */
interface FileNote {
  key: string;
  done: number;
  since: number;
  fileId?: string;
  first?: string;
}

/** How far back of `since` a look-up reads (the server's clock against the relay's). */
const CLOCK_SLACK_MS = 5 * 60_000;
/** History pages (100 messages each) a look-up reads at most. */
const LOOK_UP_PAGES = 10;

/**
 * A line's files to Rocket.Chat, each its own message (the first with the line's text, the speaker as
 * the relay sends any line): uploaded with rooms.media/:rid and sent with rooms.mediaConfirm/:rid/:fileId
 * (`msg`, `tmid`, `alias`/`avatar`/`emoji`). Not rooms.upload: deprecated since 6.x, to be removed in
 * 8.0. A file over the server's FileUpload_MaxFileSize (or `max_upload_bytes`), gone from the media
 * store, or refused by the server goes as its link line in a text message of its own `_id` instead.
 *
 * Once across a kill: mediaConfirm takes no `_id` (its body is checked field by field), so the upload's
 * id is noted durably before the confirm, and a retry first looks for the bot's message carrying that
 * file in the room's history; only when none is there is it confirmed (or, its temporary upload gone,
 * uploaded again). A kill between rooms.media and the note leaves one unconfirmed upload on the server,
 * which Rocket.Chat drops after 24 hours; the message is sent once.
 */
export class RocketFileSender {
  constructor(
    private readonly queue: DurableQueue<OutboundItem>,
    private readonly options: {
      self: () => string;
      durable: () => Promise<void>;
      media: MediaFiles;
      uploadLimit: () => number;
      roomType: (roomId: string) => 'c' | 'p' | undefined;
      counters: OutboundCounters;
      /** A text message under its own `_id` (a duplicate `_id` taken as sent), as every line is sent. */
      sendText: (rest: RocketRest, id: string, roomId: string, root: string | undefined, rendered: Rendered, signal: AbortSignal) => Promise<RocketMessage>;
      /** The id of the line's message `k` when it is text: the line's own `_id` for the first. */
      textIdOf: (key: string, k: number) => string;
    },
  ) {}

  /** Sends the line's files; answers the first message (the line's native id). */
  async post(rest: RocketRest, item: OutboundItem, roomId: string, root: string | undefined, render: (text: string, first: boolean) => Rendered, signal: AbortSignal): Promise<RocketMessage> {
    const files = item.files ?? [];
    let note = this.queue.note as FileNote | null | undefined;
    if (note?.key !== item.key) {
      note = { key: item.key, done: 0, since: Date.now() };
      this.queue.setNote(note);
    }
    let first: RocketMessage | undefined = note.first ? { _id: note.first, ...(root ? { tmid: root } : {}) } as RocketMessage : undefined;
    for (let k = note.done; k < files.length; k += 1) {
      const text = k === 0 ? item.line!.text : '';
      const made = await this.part(rest, item, roomId, root, k, files[k]!, note, (extra) => render(extra === undefined ? text : [text, extra].filter(Boolean).join('\n'), k === 0), signal);
      first ??= made;
      note = { key: item.key, done: k + 1, since: note.since, first: first._id };
      this.queue.setNote(note);
    }
    return first!;
  }

  /** One file: its message, made now or found made by an earlier attempt. */
  private async part(
    rest: RocketRest, item: OutboundItem, roomId: string, root: string | undefined, k: number, file: Attachment, note: FileNote,
    render: (extra?: string) => Rendered, signal: AbortSignal,
  ): Promise<RocketMessage> {
    const asLink = () => this.options.sendText(rest, this.options.textIdOf(item.key, k), roomId, root, render(fileLines([file]).join('\n')), signal);
    if (file.size > this.options.uploadLimit()) return asLink();
    if (note.fileId !== undefined && note.done === k) {
      const found = await this.findByFile(rest, roomId, note.fileId, note.since, signal);
      if (found) {
        this.options.counters.found_after_retry += 1;
        return found;
      }
      try {
        return await this.confirm(rest, roomId, note.fileId, root, render(), signal);
      } catch (error) {
        // The temporary upload is gone (expired, or the server lost it): uploaded again below.
        if (!(error instanceof RocketError && error.errorType === 'invalid-file')) throw error;
      }
    }
    let blob: Blob;
    try {
      blob = await openAsBlob(this.options.media.pathOf(file.id), { type: file.contentType });
    } catch {
      // The store's retention removed it: its link line stands in.
      return asLink();
    }
    let fileId: string;
    try {
      fileId = (await rest.upload(roomId, file.name, blob, signal)).file._id;
    } catch (error) {
      // Larger than the server takes after all, a type it refuses: the link line, not the line dropped.
      if (error instanceof RocketError && error.status >= 400 && error.status < 500 && error.status !== 401 && error.status !== 429) return asLink();
      throw error;
    }
    this.queue.setNote({ ...note, fileId } satisfies FileNote);
    await this.options.durable();
    return this.confirm(rest, roomId, fileId, root, render(), signal);
  }

  private async confirm(rest: RocketRest, roomId: string, fileId: string, root: string | undefined, rendered: Rendered, signal: AbortSignal): Promise<RocketMessage> {
    const answer = await rest.post<{ message: RocketMessage }>(`rooms.mediaConfirm/${encodeURIComponent(roomId)}/${encodeURIComponent(fileId)}`, {
      msg: rendered.msg, ...(root ? { tmid: root } : {}), ...(rendered.as ?? {}),
    }, signal);
    return answer.message;
  }

  /** The bot's message carrying this file, said since the line started (the room's history, newest first, a few pages at most). */
  private async findByFile(rest: RocketRest, roomId: string, fileId: string, since: number, signal: AbortSignal): Promise<RocketMessage | undefined> {
    const history = this.options.roomType(roomId) === 'p' ? 'groups.history' : 'channels.history';
    const oldest = new Date(since - CLOCK_SLACK_MS).toISOString();
    for (let page = 0; page < LOOK_UP_PAGES; page += 1) {
      const answer = await rest.get<{ messages: RocketMessage[] }>(history, { roomId, oldest, count: 100, offset: page * 100 }, signal);
      const messages = answer.messages ?? [];
      const found = messages.find((message) => message.u?._id === this.options.self()
        && (message.file?._id === fileId || (message.files ?? []).some((file) => file._id === fileId)));
      if (found || messages.length < 100) return found;
    }
    return undefined;
  }
}

/**
 * The link lines at the end of a message's text (`\[image: …\]`, `\[file: …\]`, `\[a file was not
 * relayed: …\]`, as the relay escapes them): what an edit of the line keeps. Never the first line (the
 * text's own); a text whose own last lines read exactly like link lines would keep those too.
 */
export function fileLineTail(msg: string): string[] {
  const lines = msg.split('\n');
  let start = lines.length;
  while (start > 1 && /^\\\[(image|file|a file was not relayed): /.test(lines[start - 1]!) && lines[start - 1]!.endsWith('\\]')) start -= 1;
  return lines.slice(start);
}
