/**
 * What the relay remembers of topics, bounded (oldest forgotten first): each message's topic (a reply
 * on a whole-stream side goes to its parent's topic) and each topic's first message (what the topic's
 * messages answer in the gateway).
 */
export class TopicMemory {
  private readonly topicOfMessage = new Map<string, string>();
  private readonly roots = new Map<string, number>();

  constructor(private readonly max: number) {}

  get(messageId: string): string | undefined {
    return this.topicOfMessage.get(messageId);
  }

  set(messageId: string, topic: string): void {
    this.topicOfMessage.set(messageId, topic);
    if (this.topicOfMessage.size > this.max) this.topicOfMessage.delete(this.topicOfMessage.keys().next().value!);
  }

  root(key: string): number | undefined {
    return this.roots.get(key);
  }

  setRoot(key: string, id: number): void {
    this.roots.set(key, id);
    if (this.roots.size > this.max) this.roots.delete(this.roots.keys().next().value!);
  }
}
