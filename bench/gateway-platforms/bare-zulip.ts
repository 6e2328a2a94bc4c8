import { ZulipClient } from '../../plugins/relay-zulip/client.js';

/**
 * The bare Zulip client of the platforms bench: the relay's own REST client (plugins/relay-zulip/client.ts,
 * there being no well-kept Zulip library to compare with), one POST /messages per line as it comes (no
 * queue, no noted attempt, no retry); and an event queue (register, then GET /events long-polled) whose
 * people's messages go to the chat as they come.
 */
interface Settings {
  serverUrl: string;
  email: string;
  apiKey: string;
  stream: string;
  topic: string;
  self: number;
}

const never = new AbortController().signal;

export async function connect(settings: Settings): Promise<(text: string) => void> {
  const client = new ZulipClient(settings.serverUrl, settings.email, settings.apiKey, 15_000, never);
  return (text) => {
    void client.call('POST', '/messages', { type: 'stream', to: settings.stream, topic: settings.topic, content: `**carol**: ${text}` })
      .catch((error: unknown) => process.stderr.write(`bare zulip: ${String(error)}\n`));
  };
}

export async function listen(settings: Settings, onLine: (line: string) => void): Promise<void> {
  const client = new ZulipClient(settings.serverUrl, settings.email, settings.apiKey, 15_000, never);
  const queue = await client.call<{ queue_id: string; last_event_id: number }>('POST', '/register', {
    event_types: JSON.stringify(['message']), narrow: JSON.stringify([['stream', settings.stream]]), apply_markdown: false,
  });
  let last = queue.last_event_id;
  void (async () => {
    for (;;) {
      const answer = await client.get<{ events: Array<{ id: number; type: string; message?: { sender_id: number; sender_full_name: string; content: string } }> }>(
        '/events', { queue_id: queue.queue_id, last_event_id: last }, { extraMs: 90_000 },
      ).catch(() => undefined);
      if (!answer) continue;
      for (const event of answer.events) {
        last = Math.max(last, event.id);
        if (event.type === 'message' && event.message && event.message.sender_id !== settings.self) onLine(`<${event.message.sender_full_name}> ${event.message.content}`);
      }
    }
  })();
}
