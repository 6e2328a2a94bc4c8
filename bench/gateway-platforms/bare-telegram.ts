import { Api } from 'grammy';

/**
 * The bare Telegram client of the platforms bench: grammY's Bot API client, as the relay uses it, one
 * sendMessage per line as it comes (no queue, no retry, no pacing); and a getUpdates long poll (its
 * offset in memory) whose people's messages go to the chat as they come.
 */
interface Settings {
  apiUrl: string;
  token: string;
  chat: number;
  self: number;
}

export async function connect(settings: Settings): Promise<(text: string) => void> {
  const api = new Api(settings.token, { apiRoot: settings.apiUrl });
  return (text) => {
    void api.sendMessage(settings.chat, `<carol> ${text}`).catch((error: unknown) => process.stderr.write(`bare telegram: ${String(error)}\n`));
  };
}

export async function listen(settings: Settings, onLine: (line: string) => void): Promise<void> {
  const api = new Api(settings.token, { apiRoot: settings.apiUrl });
  // From the newest update: what the gateway's turn left is not this client's.
  const last = await api.getUpdates({ offset: -1, limit: 1, timeout: 0 });
  let offset = (last.at(-1)?.update_id ?? -1) + 1;
  void (async () => {
    for (;;) {
      const updates = await api.getUpdates({ offset, timeout: 30, allowed_updates: ['message'] }).catch(() => undefined);
      if (!updates) continue;
      for (const update of updates) {
        offset = update.update_id + 1;
        const message = update.message;
        if (message?.chat.id === settings.chat && message.from && message.from.id !== settings.self && message.text) onLine(`<${message.from.first_name}> ${message.text}`);
      }
    }
  })();
}
