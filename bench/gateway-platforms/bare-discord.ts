import { API } from '@discordjs/core';
import { REST } from '@discordjs/rest';

/**
 * The bare Discord client of the platforms bench: @discordjs/rest and core, as the relay uses them, a
 * webhook made once, and each line executed through it as it comes (no queue, no durable note).
 */
export async function connect(settings: { apiUrl: string; token: string; channel: string }): Promise<(text: string) => void> {
  const api = new API(new REST({ api: settings.apiUrl }).setToken(settings.token));
  const hook = await api.channels.createWebhook(settings.channel, { name: 'bare' });
  return (text) => {
    void api.webhooks.execute(hook.id, hook.token!, { content: text, username: 'carol', allowed_mentions: { parse: [] }, wait: true })
      .catch((error: unknown) => process.stderr.write(`bare discord: ${String(error)}\n`));
  };
}
