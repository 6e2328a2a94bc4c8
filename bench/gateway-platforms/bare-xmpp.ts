import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { xml, type Element } from '@xmpp/client';
import { pino } from 'pino';
import { XmppConnection } from '../../plugins/relay-xmpp/connection.js';

/**
 * The bare XMPP client of the platforms bench: @xmpp/client on the relay's own connection code (its
 * STARTTLS with the test CA), in the room once, each line sent as it comes (no queue, no wait for the
 * reflection); the room's people's messages go to the chat as they come.
 */
let onStanza: (stanza: Element) => void = () => undefined;

export async function connect(settings: { service: string; domain: string; username: string; password: string; caFile: string; room: string }): Promise<(text: string) => void> {
  let failed: Error | undefined;
  const connection = new XmppConnection(
    { service: settings.service, domain: settings.domain, username: settings.username, password: settings.password, ca: readFileSync(settings.caFile, 'utf8'), allowSelfSigned: false, log: pino({ level: 'silent' }) },
    { online: () => undefined, resumed: () => undefined, offline: () => undefined, stanza: (stanza) => onStanza(stanza), fatal: (error) => { failed = error; } },
  );
  connection.start();
  while (!connection.online) {
    if (failed) throw failed;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await connection.send(xml('presence', { to: `${settings.room}/bare` }, xml('x', { xmlns: 'http://jabber.org/protocol/muc' }, xml('history', { maxstanzas: '0' }))));
  await new Promise((resolve) => setTimeout(resolve, 500));
  return (text) => {
    void connection.send(xml('message', { type: 'groupchat', to: settings.room, id: randomUUID() }, xml('body', {}, `<carol> ${text}`)))
      .catch((error: unknown) => process.stderr.write(`bare xmpp: ${String(error)}\n`));
  };
}

export async function listen(settings: { room: string }, onLine: (line: string) => void): Promise<void> {
  onStanza = (stanza) => {
    if (stanza.name !== 'message' || stanza.attrs.type !== 'groupchat') return;
    const from = String(stanza.attrs.from ?? '');
    const nick = from.slice(settings.room.length + 1);
    const body = stanza.getChildText('body');
    if (!from.toLowerCase().startsWith(`${settings.room.toLowerCase()}/`) || nick === 'bare' || body === null || stanza.getChild('delay', 'urn:xmpp:delay')) return;
    onLine(`<${nick}> ${body}`);
  };
}
