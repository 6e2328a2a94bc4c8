import { IrcWatcher, type IrcServer } from './irc-server.js';

/**
 * People talking on IRC in the relays' channels while the chaos runs: two nicks, each its own
 * connection, say a line in every channel in turns, round after round. Each line names who said it,
 * the channel and the round, so the chat's copy tells them apart; the order that counts is the one
 * the server gave them (an IrcAudience in the channels sees it), as the relay sees it too. Every line
 * keeps the time it was sent, to count those said while a channel's relay was away.
 */
export interface SaidOnIrc {
  nick: string;
  channel: string;
  text: string;
  at: number;
}

export class IrcPeople {
  readonly said: SaidOnIrc[] = [];

  private constructor(private readonly people: IrcWatcher[], private readonly channels: readonly string[]) {}

  static async join(irc: IrcServer, nicks: readonly string[], channels: readonly string[]): Promise<IrcPeople> {
    const people = await Promise.all(nicks.map((nick) => IrcWatcher.connect(irc.port, nick, [...channels])));
    return new IrcPeople(people, channels);
  }

  /** Matches the people's nicks (for IrcAudience.relayed and the chat's lines). */
  get nicks(): RegExp {
    return new RegExp(`^(?:${this.people.map((person) => person.nick).join('|')})$`);
  }

  /** `rounds` rounds, one every `everyMs`: in each, every person says a line in every channel. */
  async talk(rounds: number, everyMs: number): Promise<void> {
    for (let round = 1; round <= rounds; round += 1) {
      const started = Date.now();
      for (const channel of this.channels) {
        for (const person of this.people) {
          const text = `${person.nick} in ${channel} round ${round}`;
          person.send(`PRIVMSG ${channel} :${text}`);
          this.said.push({ nick: person.nick, channel, text, at: Date.now() });
        }
      }
      const rest = started + everyMs - Date.now();
      if (round < rounds && rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
    }
  }

  close(): void {
    for (const person of this.people) person.close();
  }
}
