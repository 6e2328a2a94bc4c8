import { setTimeout as pause } from 'node:timers/promises';
import type { PostGate } from './chaos.js';
import { tagsIn, type Line } from './chaos-gateway.js';
import type { PlatformSide } from './chaos-platforms.js';
import { HoldingProxy, Prosody, RoomUser } from './prosody.js';
import { waitFor } from './supervisor.js';

const PASSWORDS = { bot: 'bot-password-1', xena: 'xena-password-1', xavi: 'xavi-password-1', watch: 'watch-password-1' };
/** The relay's nick, or its fallback when a ghost of a killed session still holds it (`groupwire_`). */
const RELAY_NICK = /^groupwire/;

/**
 * XMPP in the gateway chaos run, on a real Prosody (prosody.ts) with a room keeping its archive: the
 * relay's link goes through a proxy that the run cuts (stream management resumes the session, or a new
 * one catches up from the archive), once after holding back the server's answers for a moment (the
 * reflections of the lines in flight lost). What the room says is read by a watcher in the room. The
 * room keeps every message in its archive, so nobody keeps quiet.
 */
export class XmppSide implements PlatformSide {
  readonly side = 'xmpp';
  readonly people = ['xena', 'xavi'] as const;
  private readonly talkers = new Map<string, RoomUser>();

  private constructor(
    private readonly prosody: Prosody,
    private readonly proxy: HoldingProxy,
    private readonly room: string,
    private readonly watcher: RoomUser,
  ) {}

  static async start(): Promise<XmppSide> {
    const prosody = await Prosody.start(PASSWORDS);
    const room = prosody.room('general');
    const watcher = await RoomUser.join(prosody, 'watch', PASSWORDS.watch, room, 'watcher');
    const side = new XmppSide(prosody, await HoldingProxy.start(prosody.port), room, watcher);
    for (const who of side.people) side.talkers.set(who, await RoomUser.join(prosody, who, PASSWORDS[who], room));
    return side;
  }

  plugin() {
    return {
      use: 'relay-xmpp',
      with: { service: this.proxy.service, jid: `bot@${this.prosody.domain}`, password: PASSWORDS.bot, rooms: {}, tls: { ca_file: this.prosody.caFile }, reflection_timeout_ms: 5_000 },
    };
  }

  endpoint() {
    return { xmpp: this.room };
  }

  async connected(): Promise<void> {
    await waitFor('the relay in the room', () => [...this.watcher.present].some((nick) => RELAY_NICK.test(nick)), 30_000);
  }

  async say(who: string, text: string): Promise<void> {
    await this.talkers.get(who)!.say(text);
  }

  received(): string[] {
    return this.watcher.said.filter((line) => RELAY_NICK.test(line.nick) && !line.replaces).map((line) => line.body);
  }

  /** The order the room passed its people's lines on in, as the watcher saw it. */
  origin(sent: Line[]): Line[] {
    const byTag = new Map(sent.map((line) => [line.tag, line]));
    return this.watcher.said.filter((line) => (this.people as readonly string[]).includes(line.nick))
      .flatMap((line) => tagsIn(line.body).flatMap((tag) => byTag.get(tag) ?? []));
  }

  async cut(variant: number, _gate: PostGate): Promise<string> {
    if (variant % 2 === 0) {
      this.proxy.cut();
      return 'XMPP link cut';
    }
    this.proxy.hold();
    await pause(300);
    this.proxy.cut();
    return 'XMPP server\'s answers held back for 300 ms, then the link cut';
  }

  async beforeKill(): Promise<void> {}

  async killed(): Promise<void> {}

  async close(): Promise<void> {
    for (const talker of this.talkers.values()) await talker.close();
    await this.watcher.close();
    await this.proxy.close();
    await this.prosody.close();
  }
}
