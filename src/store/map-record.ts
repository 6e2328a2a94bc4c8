import type { Attachment, RefusedFile } from '../media/attachment.js';

/** One copy of a relayed line: its native id on one endpoint, and what it was there. */
export interface MapCopy {
  id: string;
  /** The chat is the gateway's bus for the line (its relays send it on from there). */
  bus?: boolean;
  /** The bot hears the line first in this chat (its plugins answer it there). */
  first?: boolean;
}

/** A line that went through a gateway: where it was said, and its copies elsewhere. */
export interface MapRecord {
  /** `<origin endpoint> <native id>` (and for edits `~edit~<revision>`, deletions `~delete`). */
  key: string;
  gateway: string;
  origin: string;
  platform: string;
  nativeId: string;
  kind: string;
  speaker: { platform: string; id: string; name: string; email?: string };
  /**
   * The line as said, whole: the chain sees it as `ctx.text` when the bot's post of it comes back, the
   * relays are handed it from there, and a line taken again after a crash is posted from it.
   */
  text: string;
  /** The native id (at the origin) it answers, or of the message an edit or deletion changes. */
  replyTo?: string;
  /** The line names what it answers (IncomingMessage.namesParent): no quote of the parent goes before it. */
  namesParent?: true;
  /**
   * Files said with the line, as the media store keeps them (docs/gateways.md "Files"), and those
   * refused: only when there are any (a record from before files, without them, reads as none).
   */
  files?: Attachment[];
  refusedFiles?: RefusedFile[];
  at: number;
  copies: Record<string, MapCopy>;
}
