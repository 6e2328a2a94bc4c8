import { Client } from 'irc-framework';
import { relayTransport } from './transport.js';

/** Which server, who we are there and how we log in: what the irc-framework client is made with. */
export interface ClientSettings {
  server: string;
  port: number;
  tls: boolean;
  verify: boolean;
  ca?: string;
  nick: string;
  username: string;
  realname: string;
  password?: string;
  sasl?: { account: string; password: string };
}

/**
 * The irc-framework client under IrcLink, with its auto-reconnect off (the link reconnects itself) and
 * the relay's transport; `onUnsafeLine` hears of a line that had CR, LF or NUL in it, `readLine` sees
 * each line read before irc-framework does.
 */
export function ircClient(settings: ClientSettings, onUnsafeLine: (line: string) => void, readLine?: (line: string, read: () => void) => void): Client {
  const client = new Client({
    host: settings.server,
    port: settings.port,
    nick: settings.nick,
    username: settings.username,
    gecos: settings.realname,
    password: settings.password,
    // An empty account keeps irc-framework from trying the server password as a SASL login.
    account: settings.sasl ? { account: settings.sasl.account, password: settings.sasl.password } : {},
    sasl_disconnect_on_fail: Boolean(settings.sasl),
    enable_echomessage: true,
    auto_reconnect: false,
    version: '',
    ping_interval: 30,
    ping_timeout: 90,
    encoding: 'utf8',
    transport: relayTransport({ tls: settings.tls, verify: settings.verify, ca: settings.ca, onUnsafeLine, readLine }),
  });
  // draft/chathistory: lines said while the relay was away are asked for after the last one relayed (catch-up.ts).
  client.requestCap(['labeled-response', 'draft/chathistory']);
  return client;
}
