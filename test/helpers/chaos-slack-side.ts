import { FakeSlack, rendered, TOKENS } from '../fakes/slack/index.js';
import type { PostGate } from './chaos.js';
import type { Line } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { SlackPeople } from './chaos-sides.js';
import { waitFor } from './supervisor.js';

const SLACK_CHANNEL = 'C0GENERAL1';
/** The fake Slack's people behind the Slack names. */
const SLACK_IDS: Record<string, string> = { sam: 'U0ALICE001', sue: 'U0BOB00001' };

/**
 * Slack in the gateway chaos run: its people's lines are Socket Mode events of the fake Slack, which
 * keeps them while the relay has no connection and sends again what the relay did not acknowledge.
 * Slack does not keep order across its retries, so its people keep quiet around a cut and a bot kill
 * until the relay acknowledged all they said (and, after a kill, until the fake let go of the dead
 * connection).
 */
export class SlackSide implements PlatformSide {
  readonly side = 'slack';
  readonly people = ['sam', 'sue'] as const;
  private readonly talkers: SlackPeople;

  private constructor(readonly slack: FakeSlack) {
    this.talkers = new SlackPeople(slack, SLACK_CHANNEL, SLACK_IDS);
  }

  static async start(): Promise<SlackSide> {
    return new SlackSide(await FakeSlack.start());
  }

  plugin() {
    return { use: 'relay-slack', with: { token: TOKENS.bot, app_token: TOKENS.app, api_url: this.slack.apiUrl, channels: {}, request_timeout_ms: 5_000 } };
  }

  endpoint() {
    return { slack: SLACK_CHANNEL };
  }

  async connected(): Promise<void> {
    await waitFor('the relay\'s Socket Mode connection', () => this.slack.socket.openConnections().length > 0);
  }

  say(who: string, text: string): void {
    this.talkers.say(who, text);
  }

  received(): string[] {
    return this.slack.posts.filter((p) => p.channel === SLACK_CHANNEL).map((p) => rendered(p.text));
  }

  /** The order the fake sent its events in is the order said. */
  origin(sent: Line[]): Line[] {
    return sent;
  }

  /** Slack drops the relay's socket, or asks it to refresh (`disconnect`, reason refresh_requested). */
  async cut(variant: number, gate: PostGate): Promise<string> {
    const how = variant % 2 === 0 ? 'drop' : 'refresh';
    await gate.close();
    try {
      await waitFor('every Slack event acknowledged', () => this.talkers.allAcknowledged(), 30_000);
      if (how === 'drop') this.slack.socket.drop();
      else this.slack.socket.disconnect('refresh_requested');
      return `Slack socket ${how === 'drop' ? 'dropped' : 'refresh requested'} (Socket Mode connections so far: ${this.slack.socket.opened})`;
    } finally {
      gate.open();
    }
  }

  async beforeKill(): Promise<void> {
    await waitFor('every Slack event acknowledged', () => this.talkers.allAcknowledged(), 30_000);
  }

  async killed(): Promise<void> {
    await waitFor('the fake Slack letting go of the dead connection', () => this.talkers.noConnections(), 10_000);
  }

  close(): Promise<void> {
    return this.slack.close();
  }
}
