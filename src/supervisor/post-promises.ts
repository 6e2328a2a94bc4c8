import type { ChatMessage } from '../api/types.js';

interface Waiter {
  resolve(message: ChatMessage): void;
  reject(error: Error): void;
}

/**
 * The promises a chat's outbox gave out, by outbox item id: each settled once, when its post is
 * confirmed (with the stored chat_message) or fails. They live in this process only; the posts
 * themselves are in the outbox file.
 */
export class PostPromises {
  private readonly waiting = new Map<string, Waiter>();

  has(id: string): boolean {
    return this.waiting.has(id);
  }

  /** A promise for the post `id`; when someone already waits for it, both are told. */
  promise(id: string): Promise<ChatMessage> {
    const before = this.waiting.get(id);
    return new Promise<ChatMessage>((resolve, reject) => this.waiting.set(id, before
      ? { resolve: (message) => { before.resolve(message); resolve(message); }, reject: (error) => { before.reject(error); reject(error); } }
      : { resolve, reject }));
  }

  resolve(id: string, message: ChatMessage): void {
    this.waiting.get(id)?.resolve(message);
    this.waiting.delete(id);
  }

  reject(id: string, error: Error): void {
    this.waiting.get(id)?.reject(error);
    this.waiting.delete(id);
  }

  rejectAll(error: Error): void {
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }
}
