import type { Id, KeyValueStore } from '../../src/index.js';

/** Topics remembered per group: enough for months of a busy group; a reply in an older topic is relayed unthreaded. */
const KEEP = 5_000;

/**
 * The message each topic was announced with, per group: a reply in the topic is handed on as a reply to
 * it, so the gateway's message map threads it where the announcement went (a Slack thread, a Matrix
 * reply). Kept in the plugin's store, oldest forgotten first.
 */
export class TopicThreads {
  constructor(private readonly store: KeyValueStore) {}

  private key(group: string): string {
    return `threads:${group}`;
  }

  /** The announced message of a topic, if it was announced. */
  get(group: string, topicId: Id): Id | undefined {
    return this.store.get<Array<[Id, Id]>>(this.key(group))?.find(([topic]) => topic === topicId)?.[1];
  }

  /** Written with the archive cursor (the caller flushes the store). */
  remember(group: string, topicId: Id, messageId: Id): void {
    const pairs = (this.store.get<Array<[Id, Id]>>(this.key(group)) ?? []).filter(([topic]) => topic !== topicId);
    pairs.push([topicId, messageId]);
    this.store.set(this.key(group), pairs.slice(-KEEP));
  }
}
