import { Prosody, RoomUser } from '../../test/helpers/prosody.js';
import type { Marks } from '../gateway-latency/marks.js';
import type { BenchPlatform } from './platform.js';

const PASSWORDS = { bot: 'bot-password-1', bare: 'bare-password-1', watch: 'watch-password-1', xena: 'xena-password-1' };

/**
 * XMPP, on a real Prosody (test/helpers/prosody.ts): the relay sends each line into a room and waits
 * for the room's reflection; a watcher in the room stamps each line as the room passes it on.
 */
export class XmppBench implements BenchPlatform {
  readonly point = 'xmpp' as const;
  readonly how = 'groupchat message, confirmed by its reflection';

  private constructor(private readonly prosody: Prosody, private readonly room: string, private readonly watcher: RoomUser, private readonly person: RoomUser) {}

  static async start(): Promise<XmppBench> {
    const prosody = await Prosody.start(PASSWORDS);
    const room = prosody.room('bench');
    const watcher = await RoomUser.join(prosody, 'watch', PASSWORDS.watch, room, 'watcher');
    return new XmppBench(prosody, room, watcher, await RoomUser.join(prosody, 'xena', PASSWORDS.xena, room));
  }

  plugin() {
    return { use: 'relay-xmpp', with: { service: this.prosody.service, jid: `bot@${this.prosody.domain}`, password: PASSWORDS.bot, rooms: {}, tls: { ca_file: this.prosody.caFile } } };
  }

  endpoint() {
    return { xmpp: this.room };
  }

  /** The watcher keeps what the room says in a plain array: its pushes are stamped (the moment a person in the room has the line). */
  watch(marks: Marks): void {
    const said = this.watcher.said;
    const record = said.push.bind(said);
    said.push = (...added) => {
      const at = performance.now();
      for (const line of added) if (!line.replaces) marks.seen('xmpp', line.body, at);
      return record(...added);
    };
  }

  async say(text: string): Promise<void> {
    await this.person.say(text);
  }

  async bareSettings() {
    return { service: this.prosody.service, domain: this.prosody.domain, username: 'bare', password: PASSWORDS.bare, caFile: this.prosody.caFile, room: this.room };
  }

  async close(): Promise<void> {
    await this.person.close();
    await this.watcher.close();
    await this.prosody.close();
  }
}
