import type { Readable } from 'node:stream';
import { xml, type Element } from '@xmpp/client';
import { Agent, request } from 'undici';
import type { Attachment } from '../../src/index.js';
import { NS } from './muc.js';

/**
 * The server's own HTTP Upload service (XEP-0363, `urn:xmpp:http:upload:0`), found by service discovery
 * (disco#items of the server, disco#info of each): files for the rooms are put there (a slot, then an
 * HTTP PUT), and only its URLs are read when someone shares a file in a room (XEP-0066 OOB, or a body that
 * is exactly such a URL). Any other URL stays text: the relay never fetches a link a user typed.
 */

export const NS_UPLOAD = 'urn:xmpp:http:upload:0';
export const NS_OOB = 'jabber:x:oob';
const NS_DISCO_ITEMS = 'http://jabber.org/protocol/disco#items';
const NS_DATA = 'jabber:x:data';

/** What the server's upload service said of itself. */
export interface UploadService {
  /** Its JID (`upload.example.org`). */
  jid: string;
  /** The largest file it takes (x-data `max-file-size`), when it says. */
  maxSize?: number;
  /** A component of its own (`upload.example.org`), not the account's domain: only then is https on its JID trusted without upload_url_prefix. */
  dedicated: boolean;
}

/** An iq to the server (the relay's stream). */
type Ask = (iq: Element) => Promise<Element>;

/** Finds the upload service among the server's items (or the server itself); undefined when it has none. */
export async function discoverUpload(ask: Ask, domain: string): Promise<UploadService | undefined> {
  const items = await ask(xml('iq', { type: 'get', to: domain }, xml('query', { xmlns: NS_DISCO_ITEMS })));
  const jids = [domain, ...(items.getChild('query', NS_DISCO_ITEMS)?.getChildren('item').map((item) => item.attrs.jid).filter((jid): jid is string => !!jid) ?? [])];
  for (const jid of jids) {
    let info: Element;
    try {
      info = await ask(xml('iq', { type: 'get', to: jid }, xml('query', { xmlns: NS.discoInfo })));
    } catch {
      continue;
    }
    const query = info.getChild('query', NS.discoInfo);
    if (!query?.getChildren('feature').some((feature) => feature.attrs.var === NS_UPLOAD)) continue;
    const form = query.getChildren('x', NS_DATA).find((x) => x.getChildren('field').some((field) => field.attrs.var === 'FORM_TYPE' && field.getChildText('value') === NS_UPLOAD));
    const max = Number(form?.getChildren('field').find((field) => field.attrs.var === 'max-file-size')?.getChildText('value'));
    return { jid, dedicated: jid.toLowerCase() !== domain.toLowerCase(), ...(Number.isSafeInteger(max) && max > 0 ? { maxSize: max } : {}) };
  }
  return undefined;
}

/** A slot's refusal: the file is too large, or the service will not take it (quota, type). */
export class SlotRefused extends Error {}

export class HttpUpload {
  private readonly dispatcher: Agent;

  constructor(
    private readonly options: {
      /** The relay's tls settings: HTTPS is verified against these, as the stream is. */
      ca?: string;
      allowSelfSigned: boolean;
      /** upload_url_prefix: where the service's files are served; else https on the service's JID. */
      prefix?: string;
      timeoutMs: number;
    },
  ) {
    this.dispatcher = new Agent({
      connect: { ...(options.ca ? { ca: options.ca } : {}), rejectUnauthorized: !options.allowSelfSigned },
      headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs,
    });
  }

  /**
   * Whether a URL is a file on the server's own upload service: under upload_url_prefix when it is set,
   * else https on the service's JID (Prosody's and ejabberd's default), any port, when that JID is a
   * component of its own (a service on the account's domain itself would trust the whole site there).
   */
  trusts(text: string, service: UploadService | undefined): boolean {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return false;
    }
    if (url.username || url.password) return false;
    if (this.options.prefix !== undefined) {
      const prefix = new URL(this.options.prefix);
      const base = prefix.pathname.endsWith('/') ? prefix.pathname : `${prefix.pathname}/`;
      return url.origin === prefix.origin && url.pathname.startsWith(base);
    }
    return service !== undefined && service.dedicated && url.protocol === 'https:' && url.hostname === service.jid.toLowerCase();
  }

  /** A file of the upload service, streamed (no redirects followed); the caller checked trusts(). */
  async download(url: string, signal: AbortSignal): Promise<Readable> {
    const answer = await request(url, { method: 'GET', dispatcher: this.dispatcher, signal });
    if (answer.statusCode !== 200) {
      await answer.body.dump();
      throw new Error(`the upload service answered HTTP ${answer.statusCode}`);
    }
    return answer.body;
  }

  /**
   * Asks the service for a slot and puts the bytes there; answers the GET URL. A refused slot (too large,
   * over quota, a type it does not take) is a SlotRefused: the file goes as its link instead.
   */
  async upload(ask: Ask, service: UploadService, file: Attachment, bytes: Readable, signal: AbortSignal): Promise<string> {
    let slot: Element;
    try {
      const answer = await ask(xml('iq', { type: 'get', to: service.jid },
        xml('request', { xmlns: NS_UPLOAD, filename: file.name, size: String(file.size), 'content-type': file.contentType })));
      slot = answer.getChild('slot', NS_UPLOAD)!;
    } catch (error) {
      const condition = (error as { condition?: string }).condition;
      if (condition) throw new SlotRefused(`the upload service refused a slot (${condition})`);
      throw error;
    }
    const put = slot?.getChild('put')?.attrs.url;
    const get = slot?.getChild('get')?.attrs.url;
    if (!put || !get || !/^https?:\/\//.test(put) || !/^https?:\/\//.test(get)) throw new SlotRefused('the upload service answered a slot without URLs');
    // XEP-0363 §5: only these headers of the slot are passed on.
    const headers: Record<string, string> = { 'content-type': file.contentType, 'content-length': String(file.size) };
    for (const header of slot.getChild('put')!.getChildren('header')) {
      const name = (header.attrs.name ?? '').toLowerCase();
      if (name === 'authorization' || name === 'cookie' || name === 'expires') headers[name] = header.text().replace(/[\r\n]/g, '');
    }
    const answer = await request(put, { method: 'PUT', body: bytes, headers, dispatcher: this.dispatcher, signal });
    await answer.body.dump();
    if (answer.statusCode === 413) throw new SlotRefused('the upload service refused the file as too large');
    if (answer.statusCode !== 200 && answer.statusCode !== 201) throw new Error(`the upload service answered the PUT with HTTP ${answer.statusCode}`);
    return get;
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}
