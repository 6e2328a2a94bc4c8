/**
 * The forum topic of messages the relay saw lately, per chat: a line from another side answering one
 * of them, sent to the channel of the whole forum, goes into the topic its parent is in (a reply into
 * General would answer across topics). Bounded: the oldest are forgotten first; after a restart, a
 * reply to a message not seen since goes to General, as a reply when Telegram allows it.
 */
export class TopicMemory {
  private readonly topics = new Map<string, number>();

  constructor(private readonly max: number) {}

  set(chatId: string, messageId: string, topic: number): void {
    const key = `${chatId} ${messageId}`;
    this.topics.delete(key);
    this.topics.set(key, topic);
    if (this.topics.size > this.max) this.topics.delete(this.topics.keys().next().value!);
  }

  get(chatId: string, messageId: string): number | undefined {
    return this.topics.get(`${chatId} ${messageId}`);
  }
}
