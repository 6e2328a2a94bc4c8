import type { API } from '@discordjs/core';
import { DiscordAPIError } from '@discordjs/rest';
import type { Logger } from 'pino';
import { failureFields, type KeyValueStore } from '../../src/index.js';

/** A channel webhook the relay posts through (id and token, as Discord gave them). */
export interface ChannelWebhook {
  id: string;
  token: string;
}

const WEBHOOK_KEY = (channel: string) => `webhook:${channel}`;

/**
 * One webhook per channel, found or made once and kept in the plugin's store: the relay first looks for
 * a webhook of its own name in the channel (one made by an earlier run, or by hand), else creates it
 * (the bot needs Manage Webhooks). Where it cannot have one (the permission is missing), the channel
 * falls back to the bot posting `**name**: text`, and the reason is kept for the status page.
 */
export class ChannelWebhooks {
  /** Channels that cannot have a webhook, and why (until the relay restarts). */
  private readonly refused = new Map<string, string>();
  /** Ids of every webhook the relay posts through: messages from them are its own. */
  private readonly ids = new Set<string>();

  constructor(
    private readonly options: { api: () => API; store: KeyValueStore; log: Logger; name: string },
  ) {
    for (const key of options.store.keys()) {
      if (key.startsWith('webhook:')) this.ids.add(options.store.get<ChannelWebhook>(key)!.id);
    }
  }

  /** Is `webhookId` one of the relay's own webhooks? */
  isOwn(webhookId: string | undefined): boolean {
    return webhookId !== undefined && this.ids.has(webhookId);
  }

  /** Channels posting as the bot because no webhook could be had, with the reason. */
  fallbacks(): Record<string, string> {
    return Object.fromEntries(this.refused);
  }

  /** The channel's webhook, or undefined when the channel posts as the bot. Throws on a transient failure (try again later). */
  async get(channel: string, signal: AbortSignal): Promise<ChannelWebhook | undefined> {
    const known = this.options.store.get<ChannelWebhook>(WEBHOOK_KEY(channel));
    if (known) return known;
    if (this.refused.has(channel)) return undefined;
    const api = this.options.api();
    try {
      const existing = (await api.channels.getWebhooks(channel))
        .find((hook) => hook.name === this.options.name && hook.token !== undefined);
      const hook = existing ?? await api.channels.createWebhook(channel, { name: this.options.name }, { signal, reason: 'groupwire relays gateway lines under each speaker\'s name' });
      const found = { id: hook.id, token: hook.token! };
      this.ids.add(found.id);
      this.options.store.set(WEBHOOK_KEY(channel), found);
      this.options.log.info({ channel, webhook: found.id, made: !existing }, 'posting to the Discord channel through its webhook');
      return found;
    } catch (error) {
      if (error instanceof DiscordAPIError && (error.status === 403 || error.status === 404)) {
        const reason = error.status === 403
          ? 'the bot lacks Manage Webhooks in this channel: posting as the bot (**name**: text)'
          : 'the channel has no webhooks (a thread or a DM?): posting as the bot';
        this.refused.set(channel, reason);
        this.options.log.warn({ channel, ...failureFields(error) }, reason);
        return undefined;
      }
      throw error;
    }
  }

  /** The webhook was deleted on Discord (Unknown Webhook): the next post finds or makes another. */
  forget(channel: string): void {
    const known = this.options.store.get<ChannelWebhook>(WEBHOOK_KEY(channel));
    if (known) this.ids.delete(known.id);
    this.options.store.delete(WEBHOOK_KEY(channel));
  }
}

/**
 * A speaker's name as a webhook's username: Discord refuses names over 80 characters, names containing
 * "discord", "clyde", "@", "#", ":" or "```", and the names "everyone" and "here". Such parts get a
 * zero-width space (or a lookalike) so the name still reads as written.
 */
export function webhookUsername(name: string): string {
  const cleaned = name
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .replace(/(disc)(ord)/gi, '$1\u200b$2')
    .replace(/(cl)(yde)/gi, '$1\u200b$2')
    .replace(/@/g, '＠')
    .replace(/#/g, '＃')
    .replace(/:/g, '։')
    .replace(/```/g, '`\u200b``')
    .trim();
  const named = cleaned === '' ? 'someone' : /^(everyone|here)$/i.test(cleaned) ? `${cleaned}\u200b` : cleaned;
  return [...named].slice(0, 80).join('');
}
