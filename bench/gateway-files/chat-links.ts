import type WebSocket from 'ws';

/** The chat's link lines (`<alice.l> [image: name url]`): when each name's link was read, and the link. */
export class ChatLinks {
  private readonly seen = new Map<string, { at: number; url: string }>();

  constructor(socket: WebSocket) {
    socket.on('message', (data) => {
      const at = performance.now();
      const frame = JSON.parse(data.toString()) as { object?: string; message?: unknown };
      if (frame.object !== 'chat_message' || typeof frame.message !== 'string') return;
      for (const match of frame.message.matchAll(/\[image: (\S+) (http:\/\/\S+)\]/g)) this.seen.set(match[1]!, { at, url: match[2]! });
    });
  }

  /** When `name`'s link was read and the link (waits for it up to `timeoutMs`). */
  async of(name: string, timeoutMs: number): Promise<{ at: number; url: string }> {
    const end = Date.now() + timeoutMs;
    while (!this.seen.has(name)) {
      if (Date.now() > end) throw new Error(`no link of ${name} in the chat after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.seen.get(name)!;
  }
}

