import { Method, type MatrixClient } from 'matrix-js-sdk';
import type { Logger } from 'pino';
import { attributedLines, failureFields, oneLineName, receiveUntilTaken, RecentIds, type GatewayPort, type IncomingFile, type IncomingMessage } from '../../src/index.js';
import { parseMxc, type MatrixMedia } from './media.js';
import { plainFromMatrix, stripControls } from './render.js';
import { requestOptions } from './session.js';

/** A room event as /sync and /messages give it (the fields the relay reads). */
export interface RoomEvent {
  event_id: string;
  type: string;
  sender: string;
  state_key?: string;
  origin_server_ts?: number;
  redacts?: string;
  content: Record<string, any>;
  /** `prev_content`: a member event's content before it (a join after a join is a profile change). */
  unsigned?: { prev_content?: Record<string, any> };
}

export interface InboundCounters {
  received: number;
  receive_retries: number;
}

const RETRY_MS = 2_000;
const RELAYED_MSGTYPES = new Set(['m.text', 'm.notice', 'm.emote']);
/** Files: read through the homeserver's authenticated media download (media.ts), never from a URL in the event. */
const FILE_MSGTYPES = new Set(['m.image', 'm.file', 'm.video', 'm.audio']);

/**
 * Room events to the gateways: messages, emotes (as actions), edits (`m.replace`) and redactions
 * (as deletions), with the sender's display name from the room's member state. The sync loop hands
 * events in order, room by room; a line goes to every channel that names the room (its id and its
 * alias may both be written). The relay's own events never go back (no loops).
 */
export class MatrixInbound {
  /** room id → user id → display name, from member events seen (state and timeline) and joined_members. */
  private readonly names = new Map<string, Map<string, string>>();
  /** Rooms whose joined_members were read since start (once each: a sender still unknown gets the localpart). */
  private readonly membersRead = new Set<string>();
  /** Messages handed on lately: a redaction of one of them is a deletion without asking the homeserver what it was. */
  private readonly handedOn = new RecentIds(10_000);

  constructor(
    private readonly options: {
      gateway: GatewayPort;
      log: Logger;
      counters: InboundCounters;
      incoming: string;
      client: () => MatrixClient;
      /** The homeserver's media API: files said in the rooms are read through it alone. */
      media: MatrixMedia;
      self: () => string;
      channelsOf: (roomId: string) => readonly string[];
      /** A room turned end-to-end encryption on (the relay does not take part in E2EE). */
      encrypted: (roomId: string) => void;
      /** Whether an event is one of the relay's own posts (someone redacting a relayed copy is not news to the gateway). */
      ownPost: (eventId: string) => boolean;
      stopping: AbortSignal;
    },
  ) {}

  /** A room's state (or a timeline state event): who is called what, and whether the room is encrypted. */
  member(roomId: string, event: RoomEvent): void {
    if (event.type === 'm.room.encryption' && event.state_key === '') this.options.encrypted(roomId);
    if (event.type !== 'm.room.member' || event.state_key === undefined) return;
    const names = this.roomNames(roomId);
    const name = event.content.displayname;
    if (event.content.membership === 'join' && typeof name === 'string' && name.trim() !== '') names.set(event.state_key, name);
    else if (event.content.membership === 'join') names.delete(event.state_key);
  }

  /**
   * One timeline event of a room of the relay's: handed to the gateways when it is something said. An
   * event the gateways keep refusing for another reason than a chat not taking lines now is logged and
   * passed over, so that one event cannot hold up the room for good; a stop ends the batch unfinished.
   */
  async take(roomId: string, event: RoomEvent): Promise<void> {
    this.member(roomId, event);
    if (event.sender === this.options.self()) return;
    try {
      const line = await this.lineOf(roomId, event);
      if (!line) return;
      for (const channel of this.options.channelsOf(roomId)) await this.receive(channel, line);
      if (line.kind === 'message' || line.kind === 'action') this.handedOn.add(line.nativeId);
      this.options.counters.received += 1;
    } catch (error) {
      if (this.options.stopping.aborted) throw error;
      this.options.log.error({ room: roomId, event_id: event.event_id, ...failureFields(error) }, 'a Matrix event could not be handed on; it is passed over');
    }
  }

  /**
   * Whether a redacted event was something said (a message the gateways may have relayed), not a
   * reaction, a state event or the relay's own post: asked of the homeserver when it is not one of the
   * messages handed on lately (a redacted event keeps its type).
   */
  private async wasMessage(roomId: string, eventId: string): Promise<boolean> {
    if (this.options.ownPost(eventId)) return false;
    if (this.handedOn.has(eventId)) return true;
    try {
      const event = await this.options.client().http.authedRequest<RoomEvent>(
        Method.Get, `/rooms/${encodeURIComponent(roomId)}/event/${encodeURIComponent(eventId)}`, undefined, undefined, requestOptions({ abortSignal: this.options.stopping }),
      );
      return event.type === 'm.room.message' && event.sender !== this.options.self();
    } catch (error) {
      if (this.options.stopping.aborted) throw error;
      this.options.log.debug({ room: roomId, event_id: eventId, ...failureFields(error) }, 'a redacted event could not be read: its redaction is not relayed');
      return false;
    }
  }

  private async lineOf(roomId: string, event: RoomEvent): Promise<IncomingMessage | undefined> {
    const time = event.origin_server_ts !== undefined ? new Date(event.origin_server_ts).toISOString() : undefined;
    const base = { ...(time ? { time } : {}) };
    if (event.type === 'm.room.redaction') {
      // Room versions up to 10 carry `redacts` at the top; version 11 in the content.
      const target = event.content.redacts ?? event.redacts;
      if (typeof target !== 'string' || !(await this.wasMessage(roomId, target))) return undefined;
      return { ...base, kind: 'delete', text: '', nativeId: target, speaker: await this.speaker(roomId, event.sender) };
    }
    if (event.type !== 'm.room.message') return undefined;
    const content = event.content;
    const relates = content['m.relates_to'] as { rel_type?: string; event_id?: string; is_falling_back?: boolean; 'm.in_reply_to'?: { event_id?: string } } | undefined;
    if (relates?.rel_type === 'm.replace') {
      const updated = content['m.new_content'] as { body?: unknown } | undefined;
      if (typeof relates.event_id !== 'string' || typeof updated?.body !== 'string') return undefined;
      const speaker = await this.speaker(roomId, event.sender);
      const text = plainFromMatrix(updated.body, false);
      return { ...base, kind: 'edit', text, nativeId: relates.event_id, revision: event.event_id, speaker, chatText: this.render(speaker.name, text) };
    }
    if (FILE_MSGTYPES.has(content.msgtype)) return this.fileLine(roomId, event, base);
    // A redacted message has no body left; stickers, locations and the like are not relayed (docs/plugins/relay-matrix.md).
    if (typeof content.body !== 'string' || !RELAYED_MSGTYPES.has(content.msgtype)) return undefined;
    // In a thread, `m.in_reply_to` is a real reply unless it is only the fallback for clients without threads: then the line answers the thread's root.
    const inThread = relates?.rel_type === 'm.thread' && (relates.is_falling_back === true || relates['m.in_reply_to'] === undefined);
    const replyTo = inThread ? relates?.event_id : relates?.['m.in_reply_to']?.event_id;
    const text = plainFromMatrix(content.body, replyTo !== undefined);
    if (text === '') return undefined;
    const speaker = await this.speaker(roomId, event.sender);
    const line: IncomingMessage = { ...base, kind: content.msgtype === 'm.emote' ? 'action' : 'message', text, nativeId: event.event_id, speaker };
    if (typeof replyTo === 'string') line.replyTo = replyTo;
    // An action keeps the gateway's `* name text`; a message follows the `incoming` template.
    if (line.kind === 'message') line.chatText = this.render(speaker.name, text);
    return line;
  }

  /**
   * An m.image, m.file, m.video or m.audio: the file (name, type and size as the event says) read through
   * the homeserver's authenticated download of its mxc:// URI, and its caption as the text (spec v1.10: a
   * `body` other than `filename` is a caption). Encrypted media (`file` instead of `url`) only comes in
   * encrypted rooms, which the relay does not take part in: such an event, or one whose URI is not an
   * mxc:// one, is not relayed.
   */
  private async fileLine(roomId: string, event: RoomEvent, base: { time?: string }): Promise<IncomingMessage | undefined> {
    const content = event.content;
    const mxc = parseMxc(content.url);
    if (!mxc) {
      this.options.log.debug({ room: roomId, event_id: event.event_id, msgtype: content.msgtype }, 'a Matrix file event without an mxc:// url (encrypted media?) is not relayed');
      return undefined;
    }
    const body = typeof content.body === 'string' ? content.body : '';
    const filename = typeof content.filename === 'string' && content.filename.trim() !== '' ? content.filename : undefined;
    const caption = filename !== undefined && body !== filename ? plainFromMatrix(body, false) : '';
    const info = (typeof content.info === 'object' && content.info !== null ? content.info : {}) as { mimetype?: unknown; size?: unknown };
    const media = this.options.media;
    const file: IncomingFile = {
      name: stripControls(filename ?? body).trim() || 'file',
      ...(typeof info.mimetype === 'string' ? { contentType: info.mimetype } : {}),
      ...(typeof info.size === 'number' && Number.isSafeInteger(info.size) && info.size >= 0 ? { size: info.size } : {}),
      open: (signal) => media.download(mxc, signal),
    };
    const speaker = await this.speaker(roomId, event.sender);
    const line: IncomingMessage = { ...base, kind: 'message', text: caption, nativeId: event.event_id, speaker, files: [file] };
    if (caption !== '') line.chatText = this.render(speaker.name, caption);
    return line;
  }

  /** Every line of the text carries the speaker (attributedLines); the name is one line, its bidi closed. */
  private render(name: string, text: string): string {
    const shown = oneLineName(name);
    return attributedLines(text, (line) => this.options.incoming.replaceAll('{name}', () => shown).replace('{text}', () => line));
  }

  private roomNames(roomId: string): Map<string, string> {
    let names = this.names.get(roomId);
    if (!names) this.names.set(roomId, (names = new Map()));
    return names;
  }

  /** The sender's display name in the room, else their localpart (`@alice:example.org` → alice). */
  private async speaker(roomId: string, userId: string): Promise<IncomingMessage['speaker']> {
    const names = this.roomNames(roomId);
    if (!names.has(userId) && !this.membersRead.has(roomId)) {
      // After a restart the member state went by before the kept position: ask the room once.
      this.membersRead.add(roomId);
      try {
        const answer = await this.options.client().http.authedRequest<{ joined: Record<string, { display_name?: string | null }> }>(
          Method.Get, `/rooms/${encodeURIComponent(roomId)}/joined_members`, undefined, undefined, requestOptions({ abortSignal: this.options.stopping }),
        );
        for (const [id, member] of Object.entries(answer.joined ?? {})) if (member.display_name && !names.has(id)) names.set(id, member.display_name);
      } catch (error) {
        this.options.log.debug({ room: roomId, ...failureFields(error) }, 'could not read the room\'s members; names fall back to localparts');
      }
    }
    // The localpart: up to the first colon (indexOf, not /:.*$/, which rescans from each colon of a line).
    const name = names.get(userId) ?? userId.replace(/^@/, '').split(':', 1)[0]!;
    return { platform: 'matrix', id: userId, name };
  }

  /** Hands one line to the gateway; a chat that will not take it now is tried again until it does (or the relay stops). */
  private receive(channel: string, line: IncomingMessage): Promise<void> {
    return receiveUntilTaken(this.options.gateway, channel, line, {
      stopping: this.options.stopping, retryMs: RETRY_MS, onRetry: () => (this.options.counters.receive_retries += 1),
    });
  }

}
