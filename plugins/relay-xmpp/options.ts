import { z } from 'zod';

/** A bare JID (`local@domain`): the room of a MUC service, or the bot's account. */
const bareJid = (what: string) => z.string().regex(/^[^@/\s]+@[^@/\s]+$/, `${what} (local@domain, no resource)`);

const template = (what: string) => z.string().refine((value) => value.split('{text}').length === 2, `${what}: a template with {text} exactly once`);

export const relayXmppOptions = z.strictObject({
  /** Where to connect: `xmpp://host:5222` (STARTTLS, required unless the host is loopback) or `xmpps://host:5223` (direct TLS). */
  service: z.string().regex(/^xmpps?:\/\/[^\s/]+\/?$/, 'an xmpp:// or xmpps:// URL, e.g. xmpps://chat.example.org:5223'),
  /** The account: `jid` (bot@example.org), or `username` with `domain`. */
  jid: bareJid('the bot\'s account').optional(),
  username: z.string().min(1).optional(),
  domain: z.string().min(1).optional(),
  password: z.string().min(1, 'the account\'s password'),
  /** The bot's nick in every room. */
  nick: z.string().min(1).max(64).default('groupwire'),
  /** Chat subject or id → room JID (general@conference.example.org): each pair is a gateway. */
  rooms: z.record(z.string().min(1), bareJid('a room JID')).default({}),
  /** How a relayed line shows in the room: {name} and {text}. A MUC message has no display name of its own, so the name is in the text. */
  format: template('format').default('<{name}> {text}'),
  /** How an action (`/me`) relayed from elsewhere shows in the room; never a `/me` of the bot's own. */
  action_format: template('action_format').default('* {name} {text}'),
  /** How a room message shows in the chat: {name}, {text}. */
  incoming: template('incoming').default('<{name}> {text}'),
  /** How a `/me` said in the room shows in the chat. */
  incoming_action: template('incoming_action').default('* {name} {text}'),
  /** At most this many lines wait for the rooms; past it, a line is refused loudly. */
  queue_max: z.number().int().min(1).max(1_000_000).default(10_000),
  /** How long a sent line may wait for the room to reflect it before it is sent again (with the same id). */
  reflection_timeout_ms: z.number().int().min(500).max(300_000).default(15_000),
  /**
   * Where the server's HTTP Upload service (XEP-0363) serves its files, when it is not https on the
   * service's own JID (Prosody's http_external_url, a proxy): only URLs under it are read as files.
   */
  upload_url_prefix: z.string().regex(/^https?:\/\/[^\s/]+(\/\S*)?$/, 'an http(s) URL, e.g. https://upload.example.org:5281/file_share/').optional(),
  /** How long a file's upload or download may wait for the upload service before it is given up (its link goes instead). */
  file_timeout_ms: z.number().int().min(100).max(600_000).default(30_000),
  tls: z.strictObject({
    /** A PEM file of the CA (or the self-signed certificate) to trust for this server, instead of the system's. Relative to bots.yaml. */
    ca_file: z.string().min(1).optional(),
    /** Accept a certificate nobody vouches for (a test server). Off by default: never on a real network. */
    allow_self_signed: z.boolean().default(false),
  }).default({ allow_self_signed: false }),
}).superRefine((options, context) => {
  if (!options.jid && !(options.username && options.domain)) {
    context.addIssue({ code: 'custom', message: 'give jid (bot@example.org), or username and domain', path: ['jid'] });
  }
});

export type RelayXmppOptions = z.output<typeof relayXmppOptions>;
