import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { xml, type Element } from '@xmpp/client';
import { pino } from 'pino';
import { XmppConnection } from '../../plugins/relay-xmpp/connection.js';
import { archivePage, type RoomMessage } from '../../plugins/relay-xmpp/muc.js';
import { createCertificate } from '../../src/service/x509.js';
import { accepts, freePort } from './ports.js';
import { waitFor } from './supervisor.js';
import { requireTool } from './require-tool.js';

/**
 * A real Prosody (Debian's 0.12) for the XMPP relay's tests: run in the foreground from a temp dir with
 * a config of its own (c2s on a free loopback port with STARTTLS required, no s2s, no HTTP, accounts
 * registered with prosodyctl; direct TLS on a second port), a MUC component `conference.<domain>` with archives (mod_muc_mam) and
 * stream management (mod_smacks); with `upload`, an HTTP Upload service (XEP-0363, mod_http_file_share) `upload.<domain>`
 * serving on a loopback HTTP port (`uploadUrl`). Its certificate is issued by a CA made here; the relay trusts it with
 * `tls.ca_file` (verification stays on). It can be killed and started again on the same port and data.
 */

export const PROSODY = '/usr/bin/prosody';
export const PROSODYCTL = '/usr/bin/prosodyctl';

export class Prosody {
  readonly dir = mkdtempSync(join(tmpdir(), 'groupwire-prosody-'));
  readonly domain = 'groupwire.test';
  readonly muc = `conference.${this.domain}`;
  readonly caFile = join(this.dir, 'ca.pem');
  readonly configFile = join(this.dir, 'prosody.cfg.lua');
  port = 0;
  /** XEP-0368 direct TLS (xmpps://). */
  tlsPort = 0;
  private child: ChildProcess | undefined;
  output = '';
  private admins: string[] | undefined;
  /** HTTP of the upload service (0: none). */
  httpPort = 0;
  private upload: { sizeLimit: number; externalUrl?: string } | undefined;

  /**
   * `rooms.admins` may make rooms (no one else may: `restrict_room_creation = "admin"`), and a room
   * made is locked until its owner configures it (`muc_room_locking`), as a real server's may be.
   */
  static async start(users: Record<string, string>, rooms: { admins?: string[] } = {}, options: { upload?: { sizeLimit: number; externalUrl?: string } } = {}): Promise<Prosody> {
    const server = new Prosody();
    server.admins = rooms.admins;
    server.upload = options.upload;
    if (options.upload) server.httpPort = await freePort();
    server.port = await freePort();
    server.tlsPort = await freePort();
    await server.writeFiles();
    for (const [user, password] of Object.entries(users)) server.register(user, password);
    await server.start();
    return server;
  }

  get service(): string {
    return `xmpp://127.0.0.1:${this.port}`;
  }

  /** The upload service's JID. */
  get uploadJid(): string {
    return `upload.${this.domain}`;
  }

  /** Where the upload service's files are (what the relay's upload_url_prefix names): its HTTP, or `externalUrl` (a proxy in front). */
  get uploadUrl(): string {
    return `${this.upload?.externalUrl ?? `http://127.0.0.1:${this.httpPort}/`}file_share/`;
  }

  room(name: string): string {
    return `${name}@${this.muc}`;
  }

  register(user: string, password: string): void {
    const result = spawnSync(requireTool(PROSODYCTL, 'prosody'), ['--config', this.configFile, 'register', user, this.domain, password], { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`prosodyctl register ${user} failed: ${result.stderr}${result.stdout}`);
  }

  async start(): Promise<void> {
    this.output = '';
    const child = spawn(requireTool(PROSODY, 'prosody'), ['--config', this.configFile, '-F'], { cwd: this.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    await waitFor(`Prosody listening on ${this.port}`, async () => {
      if (child.exitCode !== null) throw new Error(`Prosody exited (${child.exitCode}): ${this.output}`);
      return accepts(this.port);
    }, 15_000);
  }

  /** Ends Prosody (SIGTERM: it closes its streams; SIGKILL: a crash) and waits for it. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((done) => {
      child.once('exit', () => done());
      child.kill(signal);
    });
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async writeFiles(): Promise<void> {
    const notBefore = new Date(Date.now() - 3_600_000);
    const notAfter = new Date(Date.now() + 86_400_000);
    const caKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const leafKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const signedBy = { commonName: 'groupwire test XMPP CA', ...caKeys };
    const ca = createCertificate({
      commonName: signedBy.commonName, publicKey: caKeys.publicKey, signedBy, notBefore, notAfter, isCA: true, keyUsage: ['keyCertSign', 'cRLSign'],
    });
    const leaf = createCertificate({
      commonName: this.domain, publicKey: leafKeys.publicKey, signedBy, notBefore, notAfter, isCA: false,
      keyUsage: ['digitalSignature'], extendedKeyUsage: ['serverAuth'], dnsNames: [this.domain, this.muc],
    });
    writeFileSync(this.caFile, ca);
    writeFileSync(join(this.dir, 'server.crt'), leaf);
    writeFileSync(join(this.dir, 'server.key'), leafKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    mkdirSync(join(this.dir, 'data'), { mode: 0o700 });
    mkdirSync(join(this.dir, 'certs'));
    const dir = this.dir;
    writeFileSync(this.configFile, `-- groupwire test server (test/helpers/prosody.ts)
daemonize = false
run_as_root = true
pidfile = "${dir}/prosody.pid"
data_path = "${dir}/data"
certificates = "${dir}/certs"
plugin_paths = {}
modules_enabled = { "roster", "saslauth", "tls", "disco", "ping", "smacks", "posix" }
modules_disabled = { "s2s" }
c2s_ports = { ${this.port} }
c2s_interfaces = { "127.0.0.1" }
c2s_direct_tls_ports = { ${this.tlsPort} }
c2s_direct_tls_interfaces = { "127.0.0.1" }
legacy_ssl_ports = {}
s2s_ports = {}
http_ports = { ${this.httpPort || ''} }
http_interfaces = { "127.0.0.1" }
https_ports = {}
authentication = "internal_hashed"
allow_registration = false
c2s_require_encryption = true
ssl = { certificate = "${dir}/server.crt", key = "${dir}/server.key" }
log = { { levels = { min = "info" }, to = "console" } }
${this.admins ? `admins = { ${this.admins.map((user) => `"${user}@${this.domain}"`).join(', ')} }\n` : ''}-- A resumable session (XEP-0198) outlives a short drop.
smacks_hibernation_time = 60
VirtualHost "${this.domain}"
Component "${this.muc}" "muc"
  modules_enabled = { "muc_mam" }
  muc_room_locking = ${this.admins ? 'true' : 'false'}
${this.admins ? '  restrict_room_creation = "admin"\n' : ''}  muc_room_default_persistent = true
  muc_log_by_default = true
  muc_log_all_rooms = true
  max_history_messages = 50
${this.upload ? `Component "${this.uploadJid}" "http_file_share"
  http_host = "127.0.0.1"
${this.upload.externalUrl ? `  http_external_url = "${this.upload.externalUrl}"
` : ''}  http_file_share_size_limit = ${this.upload.sizeLimit}
` : ''}`);
  }
}

/** A person in a room, on @xmpp/client: says lines, corrects them, and keeps what the room says. */
export class RoomUser {
  readonly said: Array<{ nick: string; body: string; id?: string; replaces?: string; originId?: string; stanzaId?: string; oob?: string }> = [];
  /** XEP-0424 retractions seen: the stanza-ids retracted. */
  readonly retracted: string[] = [];

  private constructor(readonly connection: XmppConnection, readonly room: string, readonly nick: string) {}

  /** Joins as `user` over the relay's own connection code (STARTTLS verified against the test CA). */
  static async join(server: Prosody, user: string, password: string, room: string, nick = user): Promise<RoomUser> {
    let joined: RoomUser | undefined;
    let refused: Error | undefined;
    const connection = new XmppConnection(
      { service: server.service, domain: server.domain, username: user, password, ca: readFileSync(server.caFile, 'utf8'), allowSelfSigned: false, log: pino({ level: 'silent' }) },
      { online: () => undefined, resumed: () => undefined, offline: () => undefined, stanza: (stanza) => joined?.stanza(stanza), fatal: (error) => { refused = error; } },
    );
    joined = new RoomUser(connection, room, nick);
    connection.start();
    await waitFor(`${user} online`, () => {
      if (refused) throw refused;
      return connection.online;
    });
    await connection.send(xml('presence', { to: `${room}/${nick}` }, xml('x', { xmlns: 'http://jabber.org/protocol/muc' }, xml('history', { maxstanzas: '0' }))));
    await waitFor(`${nick} in ${room}`, () => joined.inRoom);
    return joined;
  }

  private inRoom = false;
  /** The nicks in the room now, as its presences said. */
  readonly present = new Set<string>();

  private stanza(stanza: Element): void {
    const from = stanza.attrs.from ?? '';
    if (!from.toLowerCase().startsWith(`${this.room.toLowerCase()}/`)) return;
    const nick = from.slice(this.room.length + 1);
    if (stanza.name === 'presence' && nick === this.nick) this.inRoom = true;
    if (stanza.name === 'presence') {
      if (stanza.attrs.type === 'unavailable') this.present.delete(nick);
      else this.present.add(nick);
    }
    if (stanza.name !== 'message' || stanza.attrs.type !== 'groupchat') return;
    const retract = stanza.getChild('retract', 'urn:xmpp:message-retract:1')?.attrs.id;
    if (retract) this.retracted.push(retract);
    const body = stanza.getChildText('body');
    if (body === null || retract) return;
    const stanzaId = stanza.getChildren('stanza-id', 'urn:xmpp:sid:0').find((child) => child.attrs.by?.toLowerCase() === this.room.toLowerCase())?.attrs.id;
    const replaces = stanza.getChild('replace', 'urn:xmpp:message-correct:0')?.attrs.id;
    const originId = stanza.getChild('origin-id', 'urn:xmpp:sid:0')?.attrs.id;
    const oob = stanza.getChild('x', 'jabber:x:oob')?.getChildText('url') ?? undefined;
    this.said.push({ ...(oob ? { oob } : {}), nick, body, ...(stanza.attrs.id ? { id: stanza.attrs.id } : {}), ...(replaces ? { replaces } : {}), ...(originId ? { originId } : {}), ...(stanzaId ? { stanzaId } : {}) });
  }

  /** What `nick` said in the room (as this user saw it live), oldest first. */
  from(nick: string): string[] {
    return this.said.filter((line) => line.nick === nick && !line.replaces).map((line) => line.body);
  }

  /** Says a line; answers its message id (what a correction names). */
  async say(body: string): Promise<string> {
    const id = `u-${randomUUID()}`;
    await this.connection.send(xml('message', { type: 'groupchat', to: this.room, id }, xml('body', {}, body)));
    return id;
  }

  /**
   * Shares a file as clients do (XEP-0363 then XEP-0066): a slot from the server's upload service, the bytes
   * PUT there, then a message whose body is the GET URL with an OOB element. Answers the GET URL.
   */
  async share(uploadJid: string, bytes: Buffer, filename: string, contentType: string): Promise<string> {
    const answer = await this.connection.request(xml('iq', { type: 'get', to: uploadJid },
      xml('request', { xmlns: 'urn:xmpp:http:upload:0', filename, size: String(bytes.length), 'content-type': contentType })));
    const slot = answer.getChild('slot', 'urn:xmpp:http:upload:0')!;
    const headers: Record<string, string> = { 'content-type': contentType };
    for (const header of slot.getChild('put')!.getChildren('header')) headers[header.attrs.name!] = header.text();
    const put = await fetch(slot.getChild('put')!.attrs.url!, { method: 'PUT', body: bytes, headers });
    if (put.status !== 201 && put.status !== 200) throw new Error(`the upload PUT answered ${put.status}`);
    const url = slot.getChild('get')!.attrs.url!;
    await this.sayWith(url, xml('x', { xmlns: 'jabber:x:oob' }, xml('url', {}, url)));
    return url;
  }

  /** Says a body with more elements in the message (an OOB of the sender's choosing, ...). */
  async sayWith(body: string, ...extra: Element[]): Promise<void> {
    await this.connection.send(xml('message', { type: 'groupchat', to: this.room, id: `u-${randomUUID()}` }, xml('body', {}, body), ...extra));
  }

  /** XEP-0308: corrects the line sent with message id `id`. */
  async correct(id: string, body: string): Promise<void> {
    await this.connection.send(xml('message', { type: 'groupchat', to: this.room, id: `u-${randomUUID()}` }, xml('body', {}, body), xml('replace', { xmlns: 'urn:xmpp:message-correct:0', id })));
  }

  /** XEP-0424: retracts the message the room stamped with `stanzaId`. */
  async retract(stanzaId: string): Promise<void> {
    await this.connection.send(xml('message', { type: 'groupchat', to: this.room, id: `u-${randomUUID()}` },
      xml('retract', { xmlns: 'urn:xmpp:message-retract:1', id: stanzaId }), xml('body', {}, 'retracted'), xml('store', { xmlns: 'urn:xmpp:hints' })));
  }

  /** As a moderator: sends `nick` out of the room (XEP-0045 kick). */
  async kick(nick: string): Promise<void> {
    await this.connection.request(xml('iq', { type: 'set', to: this.room }, xml('query', { xmlns: 'http://jabber.org/protocol/muc#admin' }, xml('item', { nick, role: 'none' }))));
  }

  /** Enters the room again (one destroyed is made anew by an admin's entering, locked until unlock()). */
  async enter(): Promise<void> {
    this.inRoom = false;
    await this.connection.send(xml('presence', { to: `${this.room}/${this.nick}` }, xml('x', { xmlns: 'http://jabber.org/protocol/muc' }, xml('history', { maxstanzas: '0' }))));
    await waitFor(`${this.nick} in ${this.room} again`, () => this.inRoom);
  }

  /** As the owner of a room just made (locked): accepts the default configuration, which unlocks it (XEP-0045 10.1.2). */
  async unlock(): Promise<void> {
    await this.connection.request(xml('iq', { type: 'set', to: this.room },
      xml('query', { xmlns: 'http://jabber.org/protocol/muc#owner' }, xml('x', { xmlns: 'jabber:x:data', type: 'submit' }))));
  }

  /** As the owner: destroys the room (XEP-0045 10.9); its occupants are told and put out. */
  async destroy(): Promise<void> {
    await this.connection.request(xml('iq', { type: 'set', to: this.room },
      xml('query', { xmlns: 'http://jabber.org/protocol/muc#owner' }, xml('destroy', {}, xml('reason', {}, 'made again')))));
  }

  /** As an owner: bans the account `jid` from the room (affiliation outcast). */
  async ban(jid: string): Promise<void> {
    await this.connection.request(xml('iq', { type: 'set', to: this.room }, xml('query', { xmlns: 'http://jabber.org/protocol/muc#admin' }, xml('item', { jid, affiliation: 'outcast' }))));
  }

  /** The room's whole archive (XEP-0313), oldest first: who said what, as the room keeps it. */
  async archive(): Promise<RoomMessage[]> {
    const all: RoomMessage[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await archivePage(this.connection.client, this.room.toLowerCase(), { ...(after ? { after } : {}), max: 100 });
      all.push(...page.messages);
      if (page.complete || !page.last) return all;
      after = page.last;
    }
  }

  async close(): Promise<void> {
    await this.connection.stop();
  }
}

/**
 * A TCP proxy in front of Prosody that can stop passing the server's bytes to the client (a reflection
 * that never arrives) and cut every connection (a crash of the link). STARTTLS passes through: it only
 * moves bytes.
 */
export class HoldingProxy {
  port = 0;
  private holding = false;
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  private constructor(private readonly target: number) {
    this.server = createServer((client) => {
      const upstream = connect(this.target, '127.0.0.1');
      this.sockets.add(client).add(upstream);
      client.on('data', (chunk) => upstream.write(chunk));
      upstream.on('data', (chunk) => {
        if (!this.holding) client.write(chunk);
      });
      for (const [one, other] of [[client, upstream], [upstream, client]] as const) {
        one.on('close', () => other.destroy());
        one.on('error', () => other.destroy());
      }
    });
  }

  static async start(target: number): Promise<HoldingProxy> {
    const proxy = new HoldingProxy(target);
    await new Promise<void>((ready) => proxy.server.listen(0, '127.0.0.1', ready));
    proxy.port = (proxy.server.address() as AddressInfo).port;
    return proxy;
  }

  get service(): string {
    return `xmpp://127.0.0.1:${this.port}`;
  }

  /** From now on the server's bytes are dropped (until cut). */
  hold(): void {
    this.holding = true;
  }

  /** Closes every connection through the proxy; new ones pass everything again. */
  cut(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    this.holding = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((done) => this.server.close(done));
  }
}
