import type { API, APIMessage } from '@discordjs/core';
import type { Logger } from 'pino';
import type { APIAttachment } from '@discordjs/core';
import { attributedLines, failureFields, oneLineName, receiveUntilTaken, type GatewayPort, type IncomingFile, type IncomingMessage, type KeyValueStore } from '../../src/index.js';
import { plainFromDiscord } from './render.js';
import { compareIds } from './snowflakes.js';

/** A guild channel's message: MESSAGE_CREATE carries the author's guild `member` (and its nick); REST reads do not. */
export type GuildMessage = APIMessage & { member?: { nick?: string | null } };

/** The id of the last Discord message each channel handed to its gateway (kept in the plugin's store). */
const LAST_KEY = (channel: string) => `last:${channel}`;
const RETRY_MS = 2_000;
const PAGE = 100;

export interface InboundCounters {
  received: number;
  caught_up: number;
  receive_retries: number;
}

/**
 * Discord messages to the gateways, once each and in order per channel. Discord is the durable store:
 * the relay keeps, per channel, the id of the last message the gateway took; after a fresh gateway
 * session (a start, or a resume Discord refused) it reads what came after it with GET
 * /channels/{id}/messages (paged by `after`), so nothing said while the relay was away is lost. Live
 * messages and the catch-up go through one serial chain per channel; an id at or below the last one
 * is skipped, so a message seen both ways goes once (and the gateway dedupes by id besides).
 */
export class DiscordInbound {
  private readonly chains = new Map<string, Promise<void>>();
  /** Names of the users seen (for mentions in the text). */
  private readonly names = new Map<string, string>();

  constructor(
    private readonly options: {
      gateway: GatewayPort;
      store: KeyValueStore;
      log: Logger;
      counters: InboundCounters;
      incoming: string;
      /** Is this the relay's own post (its user's, or its webhooks')? Those are never relayed back. */
      own: (message: GuildMessage) => boolean;
      /** An attachment as the gateway reads it (from Discord's CDN only: files-in.ts). */
      file: (attachment: APIAttachment) => IncomingFile;
      stopping: AbortSignal;
    },
  ) {}

  /** A MESSAGE_CREATE of a channel of the relay's gateways. */
  live(message: GuildMessage): void {
    this.inOrder(message.channel_id, () => this.take(message));
  }

  /** An edit or a deletion: handed on as such (the gateway maps it to what it relayed). */
  changed(channel: string, change: IncomingMessage): void {
    this.inOrder(channel, () => this.receive(channel, change));
  }

  /** A fresh session: read what each channel said since its last message handed on. */
  catchUp(api: API, channels: readonly string[]): void {
    for (const channel of channels) this.inOrder(channel, () => this.catchUpChannel(api, channel));
  }

  async idle(): Promise<void> {
    await Promise.all(this.chains.values());
  }

  private inOrder(channel: string, work: () => Promise<void>): void {
    const next = (this.chains.get(channel) ?? Promise.resolve()).then(work).catch((error: unknown) => {
      this.options.log.error({ channel, ...failureFields(error) }, 'a Discord message could not be handed on');
    });
    this.chains.set(channel, next);
  }

  private async catchUpChannel(api: API, channel: string): Promise<void> {
    let after = this.options.store.get<string>(LAST_KEY(channel));
    // A first start hands on what is said from now on, not the channel's past.
    if (after === undefined) return;
    for (;;) {
      if (this.options.stopping.aborted) return;
      let page: APIMessage[];
      try {
        page = await api.channels.getMessages(channel, { after, limit: PAGE });
      } catch (error) {
        this.options.log.warn({ channel, ...failureFields(error) }, 'could not read what the Discord channel said meanwhile; trying again');
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        continue;
      }
      const ordered = page.toSorted((a, b) => compareIds(a.id, b.id));
      for (const message of ordered) {
        await this.take(message);
        this.options.counters.caught_up += 1;
      }
      if (page.length < PAGE) return;
      after = ordered.at(-1)!.id;
    }
  }

  private async take(message: GuildMessage): Promise<void> {
    const channel = message.channel_id;
    const last = this.options.store.get<string>(LAST_KEY(channel));
    if (last !== undefined && compareIds(message.id, last) <= 0) return;
    const own = this.options.own(message);
    const name = message.member?.nick ?? message.author.global_name ?? message.author.username;
    this.names.set(message.author.id, name);
    const attachments = message.attachments ?? [];
    if (!own && ((message.content ?? '') !== '' || attachments.length > 0)) {
      const text = plainFromDiscord(message.content ?? '', this.names);
      await this.receive(channel, {
        kind: 'message', text, nativeId: message.id, time: message.timestamp,
        speaker: { platform: 'discord', id: message.author.id, name },
        ...(message.message_reference?.message_id ? { replyTo: message.message_reference.message_id } : {}),
        // The gateway reads the files into its media store and shows their links after the text.
        ...(attachments.length > 0 ? { files: attachments.map((attachment) => this.options.file(attachment)) } : {}),
        // A message of files alone has no text line: the gateway's file lines carry the speaker.
        ...(text.trim() === '' ? {} : { chatText: attributedLines(text, (line) => this.options.incoming.replace('{name}', () => oneLineName(name)).replace('{text}', () => line)) }),
      });
      this.options.counters.received += 1;
    }
    this.options.store.set(LAST_KEY(channel), message.id);
  }

  /** Hands one line to the gateway; a chat that will not take it now is tried again until it does (or the relay stops). */
  private receive(channel: string, line: IncomingMessage): Promise<void> {
    return receiveUntilTaken(this.options.gateway, channel, line, {
      stopping: this.options.stopping, retryMs: RETRY_MS, onRetry: () => (this.options.counters.receive_retries += 1),
    });
  }
}
