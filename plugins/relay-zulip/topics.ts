import type { Logger } from 'pino';
import { failureFields } from '../../src/index.js';
import { ZulipError, type ZulipClient } from './client.js';
import type { ZulipMessage } from './intake.js';

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

/** Topics the relay does not remember yet, read from Zulip (and then remembered). */
export class TopicLookup {
  constructor(
    private readonly topics: TopicMemory,
    private readonly client: () => ZulipClient,
    private readonly log: Logger,
    private readonly stopping: AbortSignal,
  ) {}

  /** The first message of a message's topic (looked up once a topic): what its topic's messages answer on a whole-stream side. */
  async rootOf(stream: string, message: ZulipMessage): Promise<number | undefined> {
    const key = `${stream.toLowerCase()}\n${message.subject.toLowerCase()}`;
    const known = this.topics.root(key);
    if (known !== undefined) return known;
    try {
      const page = await this.client().get<{ messages: ZulipMessage[] }>('/messages', {
        anchor: 'oldest', num_before: 0, num_after: 1, apply_markdown: false,
        narrow: JSON.stringify([['stream', stream], ['topic', message.subject]]),
      });
      const root = page.messages?.[0]?.id ?? message.id;
      this.topics.setRoot(key, root);
      return root;
    } catch (error) {
      if (this.stopping.aborted) throw error;
      this.log.debug({ stream, ...failureFields(error) }, 'could not read the Zulip topic\'s first message; relayed without its thread');
      return undefined;
    }
  }

  /** A message's topic: seen by the relay, else read (undefined when it is gone or not readable). */
  async topicOf(messageId: string, signal: AbortSignal): Promise<string | undefined> {
    const known = this.topics.get(messageId);
    if (known !== undefined) return known;
    try {
      const answer = await this.client().get<{ message: ZulipMessage }>(`/messages/${encodeURIComponent(messageId)}`, { apply_markdown: false }, { signal });
      this.topics.set(messageId, answer.message.subject);
      return answer.message.subject;
    } catch (error) {
      if (error instanceof ZulipError && error.status === 400) return undefined;
      throw error;
    }
  }
}
