import type { ChatMessage, GroupsClient } from '../../src/api/index.js';
import type { FakeSlack, SentEnvelope } from '../fakes/slack/index.js';
import { IrcWatcher, type IrcServer } from './irc-server.js';

/**
 * The people and the readers of the gateway chaos run's three sides (test/chaos-gateway.test.ts):
 * the chat read from its history as it grows, people on IRC who reconnect after the server's outage,
 * and people in the fake Slack whose events must all reach the relay.
 */

/** A chat's history past a msg_num, read on from where the last read ended. */
export class ChatLog {
  readonly messages: ChatMessage[] = [];

  constructor(
    private readonly client: GroupsClient,
    private readonly chatId: string,
    private after: number,
  ) {}

  /** Reads what came since the last read; answers the whole log. */
  async read(): Promise<ChatMessage[]> {
    for await (const message of this.client.paginate<ChatMessage>('getchathistory', { chat_id: this.chatId, start_msg_num: this.after, sort_dir: 'asc', limit: 100 })) {
      this.messages.push(message);
      this.after = message.msg_num;
    }
    return this.messages;
  }
}

/**
 * People talking in one IRC channel, a raw client each. The server's outage ends their connections;
 * `connect` again once it is back.
 */
export class IrcPeople {
  private readonly connections = new Map<string, IrcWatcher>();

  constructor(
    private readonly server: IrcServer,
    readonly nicks: readonly string[],
    private readonly channel: string,
  ) {}

  async connect(password?: string): Promise<void> {
    for (const nick of this.nicks) {
      this.connections.get(nick)?.close();
      this.connections.set(nick, await IrcWatcher.connect(this.server.port, nick, [this.channel], password));
    }
  }

  say(nick: string, text: string): void {
    this.connections.get(nick)!.send(`PRIVMSG ${this.channel} :${text}`);
  }

  close(): void {
    for (const connection of this.connections.values()) connection.close();
  }
}

/** Slack's escaping of a person's text in an event (`&`, `<`, `>`; https://api.slack.com/reference/surfaces/formatting#escaping). */
export function slackEscaped(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * People talking in one channel of the fake Slack: each line is a Socket Mode message event, which the
 * fake delivers to the relay's connection, keeps while there is none, and sends again (a new envelope,
 * the same event_id) when a connection ends before the relay acknowledged it.
 */
export class SlackPeople {
  /** The person events sent, by event_id. */
  private readonly events = new Set<string>();

  constructor(
    private readonly slack: FakeSlack,
    private readonly channel: string,
    private readonly ids: Record<string, string>,
  ) {}

  say(who: string, text: string): SentEnvelope {
    const envelope = this.slack.message(this.channel, this.ids[who]!, slackEscaped(text));
    this.events.add(envelope.payload.event_id);
    return envelope;
  }

  /**
   * Whether the relay acknowledged every person event said so far: none waits for a connection, and
   * the last envelope of each (a retry is a new envelope) was acknowledged. Then no retry can come
   * after a line said later.
   */
  allAcknowledged(): boolean {
    if (this.slack.socket.pendingCount > 0) return false;
    const acked = new Set(this.slack.acks);
    const last = new Map<string, string>();
    for (const envelope of this.slack.socket.sent) {
      if (this.events.has(envelope.payload.event_id)) last.set(envelope.payload.event_id, envelope.envelope_id);
    }
    return last.size === this.events.size && [...last.values()].every((id) => acked.has(id));
  }

  /**
   * Whether the fake has let go of every connection (closed, its unacknowledged envelopes queued
   * again). Until then a line said now could be sent before the retries of the dead connection's.
   * The fake keeps its connections private; this reads the set by name and fails loudly if it is gone.
   */
  noConnections(): boolean {
    const connections = Reflect.get(this.slack.socket, 'connections') as Set<unknown> | undefined;
    if (!(connections instanceof Set)) throw new Error('the fake Slack no longer keeps its connections in a set named connections: update SlackPeople.noConnections');
    return connections.size === 0;
  }
}
