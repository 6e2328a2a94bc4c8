import { RawIrc } from '../lib/raw-irc.js';

/**
 * The gateway bench's IRC → IRC baseline, run in a process of its own like groupwire's supervisor: a
 * raw client in a channel of one server that writes each PRIVMSG it reads there, as `<nick> text`, to
 * its own raw connection in a channel of the other server. No queue, no journal, no confirmation (it
 * never waits to learn whether the server took a line). It prints `ready` once both channels are
 * joined. Its one argument is JSON: { fromPort, toPort, nick, channel }.
 */
interface BareSettings {
  fromPort: number;
  toPort: number;
  nick: string;
  channel: string;
}

const PRIVMSG = /^(?:@\S+ )?:([^!\s]+)\S* PRIVMSG (\S+) :(.*)$/;

const settings = JSON.parse(process.argv[2] ?? '') as BareSettings;
const to = await RawIrc.connect(settings.toPort, settings.nick, settings.channel);
const from = await RawIrc.connect(settings.fromPort, settings.nick, settings.channel);
from.onLine = (line) => {
  const said = PRIVMSG.exec(line);
  if (said && said[2]!.toLowerCase() === settings.channel.toLowerCase()) to.send(`PRIVMSG ${settings.channel} :<${said[1]}> ${said[3]}`);
};
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  from.close();
  to.close();
  process.exit(0);
});
