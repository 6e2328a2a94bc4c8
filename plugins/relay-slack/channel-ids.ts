import type { KeyValueStore } from '../../src/index.js';
import { channelKey } from './channels.js';

/**
 * The ids of channels given by name, as learned (chat.postMessage answers the id of a channel posted
 * to by `#name`; conversations.info names an id). chat.update and chat.delete take only an id, and an
 * edit may come after a restart, so what was learned is kept in the plugin's store.
 */
export class ChannelIds {
  private readonly byName: Map<string, string>;

  constructor(
    private readonly store: KeyValueStore,
    private readonly storeKey = 'channel-ids',
  ) {
    this.byName = new Map(Object.entries(store.get<Record<string, string>>(storeKey) ?? {}));
  }

  learn(name: string, id: string): void {
    const key = name.replace(/^#/, '').toLowerCase();
    if (this.byName.get(key) === id) return;
    this.byName.set(key, id);
    this.store.set(this.storeKey, Object.fromEntries(this.byName));
  }

  /** The id of a channel reference: itself when it is an id, else the learned id of its name. */
  idOf(ref: string): string | undefined {
    const key = channelKey(ref);
    return key.startsWith('#') ? this.byName.get(key.slice(1)) : key;
  }
}
