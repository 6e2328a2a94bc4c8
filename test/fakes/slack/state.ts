/** The fake Slack's workspace: who and what exists, and the ids of the relay's identity. */

export interface FakeUser {
  id: string;
  name: string;
  real_name?: string;
  display_name?: string;
  is_bot?: boolean;
}

export interface FakeChannel {
  id: string;
  name: string;
  is_private?: boolean;
  /** Whether the app's bot user is in it (chat.postMessage answers not_in_channel otherwise). */
  is_member?: boolean;
}

export const TEAM = { id: 'T0FAKE0001', name: 'Fake Workspace', domain: 'fake' } as const;
export const APP_ID = 'A0RELAY001';
export const BOT = { userId: 'U0RELAYBOT', botId: 'B0RELAY001', name: 'relay' } as const;
export const TOKENS = { bot: 'xoxb-fake-bot-token', app: 'xapp-fake-app-token' } as const;

export function defaultUsers(): FakeUser[] {
  return [
    { id: 'U0ALICE001', name: 'alice', real_name: 'Alice Liddell', display_name: 'alice.l' },
    { id: 'U0BOB00001', name: 'bob', real_name: 'Bob Builder', display_name: '' },
    { id: 'U0MALLORY1', name: 'mallory', real_name: 'Mallory', display_name: 'Mallory> <!channel' },
    { id: BOT.userId, name: BOT.name, real_name: 'Relay', is_bot: true },
  ];
}

export function defaultChannels(): FakeChannel[] {
  return [
    { id: 'C0GENERAL1', name: 'general', is_member: true },
    { id: 'C0RANDOM01', name: 'random', is_member: true },
    { id: 'C0ELSEWHER', name: 'elsewhere', is_member: true },
    { id: 'C0NOTMEMBR', name: 'outside', is_member: false },
  ];
}

/** Slack message timestamps: seconds.micro, unique and increasing. */
export class Clock {
  private last = 0;

  ts(): string {
    const micros = Math.max(Date.now() * 1000, this.last + 1);
    this.last = micros;
    return `${Math.floor(micros / 1e6)}.${String(micros % 1e6).padStart(6, '0')}`;
  }
}

/**
 * The mentions Slack would make of a posted text: `<!channel>`-style and `<@U…>`/`<#C…>`/`<!subteam^…>`
 * sequences, and — stricter than Slack with link_names off — any bare @channel/@here/@everyone/@group.
 */
export function mentionsIn(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/<([!@#][^<>]*)>/g)) found.push(match[1]!);
  for (const match of text.matchAll(/(?<![\p{L}\p{N}_])[@\uFF20\uFE6B](channel|here|everyone|group)(?![\p{L}\p{N}_])/giu)) found.push(`@${match[1]!}`);
  return found;
}

/** What a Slack client shows for a text: the three entities unescaped once. */
export function rendered(text: string): string {
  return text.replace(/&(amp|lt|gt);/g, (_, entity: string) => (entity === 'amp' ? '&' : entity === 'lt' ? '<' : '>'));
}
