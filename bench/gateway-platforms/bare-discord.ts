import { API, GatewayDispatchEvents, GatewayIntentBits } from '@discordjs/core';
import { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';

/**
 * The bare Discord client of the platforms bench: @discordjs/rest and core, as the relay uses them, a
 * webhook made once, and each line executed through it as it comes (no queue, no durable note); and a
 * gateway session of @discordjs/ws whose people's messages go to the chat as they come.
 */
export async function connect(settings: { apiUrl: string; token: string; channel: string }): Promise<(text: string) => void> {
  const api = new API(new REST({ api: settings.apiUrl }).setToken(settings.token));
  const hook = await api.channels.createWebhook(settings.channel, { name: 'bare' });
  return (text) => {
    void api.webhooks.execute(hook.id, hook.token!, { content: text, username: 'carol', allowed_mentions: { parse: [] }, wait: true })
      .catch((error: unknown) => process.stderr.write(`bare discord: ${String(error)}\n`));
  };
}

export async function listen(settings: { apiUrl: string; token: string; channel: string }, onLine: (line: string) => void): Promise<void> {
  const rest = new REST({ api: settings.apiUrl }).setToken(settings.token);
  const manager = new WebSocketManager({ token: settings.token, rest, intents: GatewayIntentBits.Guilds | GatewayIntentBits.GuildMessages | GatewayIntentBits.MessageContent });
  manager.on(WebSocketShardEvents.Dispatch, (payload) => {
    if (payload.t !== GatewayDispatchEvents.MessageCreate || payload.d.channel_id !== settings.channel) return;
    if (payload.d.webhook_id || payload.d.author.bot) return;
    onLine(`<${payload.d.author.username}> ${payload.d.content}`);
  });
  await manager.connect();
}
