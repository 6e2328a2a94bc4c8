import { randomUUID } from 'node:crypto';
import { xml, type Client, type Element } from '@xmpp/client';

/**
 * The XMPP of a MUC room the relay needs: joining without history (XEP-0045), asking what the room
 * supports (XEP-0030), reading its archive (XEP-0313 MAM over XEP-0059 RSM), and reading a room message
 * (XEP-0359 stanza-id and origin-id, XEP-0308 corrections, XEP-0424 retractions, XEP-0203 delay).
 */
export const NS = {
  muc: 'http://jabber.org/protocol/muc',
  mucUser: 'http://jabber.org/protocol/muc#user',
  discoInfo: 'http://jabber.org/protocol/disco#info',
  mam: 'urn:xmpp:mam:2',
  rsm: 'http://jabber.org/protocol/rsm',
  forward: 'urn:xmpp:forward:0',
  delay: 'urn:xmpp:delay',
  sid: 'urn:xmpp:sid:0',
  correct: 'urn:xmpp:message-correct:0',
  retract: 'urn:xmpp:message-retract:1',
  fallback: 'urn:xmpp:fallback:0',
  hints: 'urn:xmpp:hints',
  oob: 'jabber:x:oob',
  stanzas: 'urn:ietf:params:xml:ns:xmpp-stanzas',
} as const;

/** A groupchat message of a room, live or from its archive. */
export interface RoomMessage {
  /** The room's bare JID, lower-cased. */
  room: string;
  nick: string;
  /** The message's own id attribute (what XEP-0308 corrections name). */
  id?: string;
  originId?: string;
  /** The room's XEP-0359 stanza-id: the relay's native id and position. */
  stanzaId?: string;
  body?: string;
  /** XEP-0308: the id of the message this corrects. */
  replaces?: string;
  /** XEP-0424: the stanza-id of the message this retracts. */
  retracts?: string;
  /** XEP-0203 delay stamp (archive results, resent stanzas). */
  time?: string;
  /** XEP-0066: the URL of a file shared with the message (`<x xmlns='jabber:x:oob'><url>`). */
  oob?: string;
}

export const bareOf = (address: string | undefined): string => (address ?? '').split('/')[0]!.toLowerCase();
const resourceOf = (address: string | undefined): string => {
  const slash = (address ?? '').indexOf('/');
  return slash < 0 ? '' : address!.slice(slash + 1);
};

/**
 * Reads a `<message type='groupchat'>` from `room/nick`. The stanza-id is taken only when the room
 * itself stamped it (`by` = the room: XEP-0359 has the room strip any other a sender put in); an
 * archive result passes the archive's id.
 */
export function readRoomMessage(message: Element, archiveId?: string, archiveTime?: string): RoomMessage | undefined {
  if (message.name !== 'message' || message.attrs.type !== 'groupchat') return undefined;
  const room = bareOf(message.attrs.from);
  const nick = resourceOf(message.attrs.from);
  if (!room || !nick) return undefined;
  const stamped = message.getChildren('stanza-id', NS.sid).find((child) => bareOf(child.attrs.by) === room)?.attrs.id;
  const originId = message.getChild('origin-id', NS.sid)?.attrs.id;
  const body = message.getChildText('body') ?? undefined;
  const replaces = message.getChild('replace', NS.correct)?.attrs.id;
  const retracts = message.getChild('retract', NS.retract)?.attrs.id;
  const time = archiveTime ?? message.getChild('delay', NS.delay)?.attrs.stamp;
  const oob = message.getChild('x', NS.oob)?.getChildText('url')?.trim() || undefined;
  return {
    room, nick, ...(message.attrs.id ? { id: message.attrs.id } : {}), ...(originId ? { originId } : {}),
    ...(archiveId ?? stamped ? { stanzaId: (archiveId ?? stamped)! } : {}), ...(body !== undefined ? { body } : {}),
    ...(replaces ? { replaces } : {}), ...(retracts ? { retracts } : {}), ...(time ? { time } : {}), ...(oob ? { oob } : {}),
  };
}

/** The next stanza `match` accepts, or undefined after `timeoutMs` or when the stream drops. */
function nextStanza(client: Client, match: (stanza: Element) => boolean, timeoutMs: number): Promise<Element | undefined> {
  return new Promise((done) => {
    const end = (stanza: Element | undefined) => {
      clearTimeout(timer);
      client.off('stanza', listener);
      client.off('disconnect', dropped);
      done(stanza);
    };
    const listener = (stanza: Element) => {
      if (match(stanza)) end(stanza);
    };
    const dropped = () => end(undefined);
    const timer = setTimeout(dropped, timeoutMs);
    client.on('stanza', listener);
    client.on('disconnect', dropped);
  });
}

/** The defined condition of a stanza error (`conflict`, `forbidden`, ...). */
export function errorCondition(stanza: Element): string {
  return stanza.getChild('error')?.children.find((child): child is Element => typeof child !== 'string' && child.attrs.xmlns === NS.stanzas)?.name ?? 'error';
}

export type JoinOutcome = { joined: true; nick: string } | { joined: false; condition: string };

/**
 * Joins `room` as `nick` with no history replayed (the archive is read instead, from the relay's own
 * position). A nick taken by someone else is tried with `_` added, twice.
 */
export async function joinRoom(client: Client, room: string, nick: string, timeoutMs = 15_000): Promise<JoinOutcome> {
  let condition = 'no answer';
  for (const tried of [nick, `${nick}_`, `${nick}__`]) {
    const occupant = `${room}/${tried}`;
    const answer = nextStanza(client, (stanza) => stanza.name === 'presence' && stanza.attrs.from?.toLowerCase() === occupant.toLowerCase() &&
      (stanza.attrs.type === 'error' || (stanza.getChild('x', NS.mucUser)?.getChildren('status').some((s) => s.attrs.code === '110') ?? false)), timeoutMs);
    await client.send(xml('presence', { to: occupant }, xml('x', { xmlns: NS.muc }, xml('history', { maxstanzas: '0' }))));
    const presence = await answer;
    if (!presence) return { joined: false, condition };
    if (presence.attrs.type !== 'error') return { joined: true, nick: tried };
    condition = errorCondition(presence);
    // Banned, members only, a password, locked, no such room: the relay decides what to do.
    if (condition !== 'conflict') return { joined: false, condition };
  }
  return { joined: false, condition };
}

/** Whether the room keeps an archive the relay can read (disco#info feature urn:xmpp:mam:2). */
export async function hasArchive(client: Client, room: string): Promise<boolean> {
  const info = await client.iqCaller.request(xml('iq', { type: 'get', to: room }, xml('query', { xmlns: NS.discoInfo })), 20_000);
  return info.getChild('query', NS.discoInfo)?.getChildren('feature').some((feature) => feature.attrs.var === NS.mam) ?? false;
}

export interface ArchivePage {
  messages: RoomMessage[];
  complete: boolean;
  /** The stanza-id of the page's last result (for the next page). */
  last?: string;
}

/**
 * One page of the room's archive, oldest first: after `after` (a stanza-id), or with `latest` the
 * newest `max` messages. Results come as messages before the iq's answer, marked with the query's id.
 */
export async function archivePage(client: Client, room: string, page: { after?: string; latest?: boolean; max: number }): Promise<ArchivePage> {
  const queryid = randomUUID();
  const messages: RoomMessage[] = [];
  const collect = (stanza: Element) => {
    const result = stanza.getChild('result', NS.mam);
    if (stanza.name !== 'message' || bareOf(stanza.attrs.from) !== room || result?.attrs.queryid !== queryid) return;
    const forwarded = result.getChild('forwarded', NS.forward);
    const inner = forwarded?.getChild('message');
    const read = inner && readRoomMessage(inner, result.attrs.id, forwarded?.getChild('delay', NS.delay)?.attrs.stamp);
    if (read) messages.push(read);
  };
  client.on('stanza', collect);
  try {
    const set = xml('set', { xmlns: NS.rsm }, xml('max', {}, String(page.max)),
      page.latest ? xml('before', {}) : page.after !== undefined ? xml('after', {}, page.after) : undefined);
    const answer = await client.iqCaller.request(xml('iq', { type: 'set', to: room }, xml('query', { xmlns: NS.mam, queryid }, set)), 30_000);
    const fin = answer.getChild('fin', NS.mam);
    const last = fin?.getChild('set', NS.rsm)?.getChildText('last') ?? undefined;
    return { messages, complete: fin?.attrs.complete === 'true', ...(last ? { last } : {}) };
  } finally {
    client.off('stanza', collect);
  }
}
