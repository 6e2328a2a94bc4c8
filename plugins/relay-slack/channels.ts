import { CHANNEL_ID } from './options.js';

/** One channel of the relay's gateways, as bots.yaml wrote it: a Slack id, or a name (without `#`, lower case). */
interface Channel {
  ref: string;
  id?: string;
  name?: string;
}

/**
 * The form of a channel reference that compares equal (PlatformSpec.channelKey): an id as it is, a
 * name as `#name` in lower case (Slack names are lower case; `#Random`, `random` and `#random` are one).
 * With `#` it is always a name: `#GENERAL` is not taken for an id.
 */
export function channelKey(ref: string): string {
  const trimmed = ref.trim();
  return !trimmed.startsWith('#') && CHANNEL_ID.test(trimmed) ? trimmed : `#${trimmed.replace(/^#/, '').toLowerCase()}`;
}

/**
 * The Slack channels the relay's gateways use (env.gateway.channels(): those its `channels:` maps and
 * those bots.yaml's `gateways:` name), by id or by name. Events come by channel id: ids match at once;
 * a channel given by name matches once its name is known (conversations.info, or learned from a post).
 */
export class ChannelMap {
  private readonly channels: Channel[];

  constructor(refs: Iterable<string>) {
    const seen = new Set<string>();
    this.channels = [];
    for (const ref of refs) {
      const key = channelKey(ref);
      if (seen.has(key)) continue;
      seen.add(key);
      this.channels.push(key.startsWith('#') ? { ref, name: key.slice(1) } : { ref, id: key });
    }
  }

  /** The references (as the gateways know them) a Slack channel's events belong to. */
  refsFor(channelId: string, channelName?: string): string[] {
    const name = channelName?.toLowerCase();
    return this.channels.filter((c) => c.id === channelId || (name !== undefined && c.name === name)).map((c) => c.ref);
  }

  /** True when an event from this channel could be mapped: its id is, or some channel is given by name. */
  mightMap(channelId: string): boolean {
    return this.channels.some((c) => c.id === channelId || c.name !== undefined);
  }

  /** True when matching this channel needs its name. */
  needsName(channelId: string): boolean {
    return !this.channels.some((c) => c.id === channelId) && this.channels.some((c) => c.name !== undefined);
  }

  /** The channel ids given (checked at start). */
  ids(): string[] {
    return this.channels.flatMap((c) => (c.id ? [c.id] : []));
  }

  get size(): number {
    return this.channels.length;
  }
}

/** What chat.postMessage takes for a reference: the id, or `#name`. */
export function postTarget(ref: string): string {
  return channelKey(ref);
}
