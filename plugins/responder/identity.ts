import type { Speaker } from '../../src/index.js';

/**
 * The people access rules and moderators name (`users:` entries), and whether a speaker is one of
 * them. A command can come from a chat member or, through a gateway, from IRC or Slack; the chat
 * message of a relayed line is the bot's own, so identities are always matched against ctx.sender,
 * never against the message's user_id or e-mail.
 *
 *   1001                      a chat member's user id (as the service sends it)
 *   chat:1001                 the same, said explicitly
 *   a@example.com             a chat member's e-mail address, ignoring case
 *   irc:nick!user@host        an IRC mask: `*` and `?` wildcards, case-insensitive (IRC folding)
 *   irc:nick                  irc:nick!*@*: anyone who takes that nick (spoofable: name a host too)
 *   slack:U012ABCDEF          a Slack user id
 *   <platform>:<id>           anyone on another relay's platform, by its id, exactly
 */
export type Identity =
  | { kind: 'chat'; id: string }
  | { kind: 'email'; address: string }
  | { kind: 'mask'; platform: string; mask: string; pattern: RegExp }
  | { kind: 'native'; platform: string; id: string };

/** Platforms whose people are named by a mask (`nick!user@host`) rather than by an exact id. */
const MASK_PLATFORMS = new Set(['irc']);

/** `irc:`, `slack:`, ...: a platform name as relays declare it. */
const PREFIX = /^([a-z][a-z0-9_-]*):(.*)$/s;

export class IdentityError extends Error {
  override name = 'IdentityError';
}

/** Reads one `users:` entry; throws IdentityError for one that can never match anyone. */
export function parseIdentity(entry: string): Identity {
  const text = entry.trim();
  const prefixed = PREFIX.exec(text);
  if (!prefixed) {
    if (text === '') throw new IdentityError('an empty entry names nobody');
    // A chat user id never holds an `@`: such an entry is an e-mail address.
    return text.includes('@') ? { kind: 'email', address: text.toLowerCase() } : { kind: 'chat', id: text };
  }
  const platform = prefixed[1]!;
  const rest = prefixed[2]!.trim();
  if (rest === '') throw new IdentityError(`${platform}: names nobody (write ${platform}:<id>)`);
  if (platform === 'chat') return { kind: 'chat', id: rest };
  if (MASK_PLATFORMS.has(platform)) return { kind: 'mask', platform, mask: fullMask(rest), pattern: maskPattern(fullMask(rest)) };
  return { kind: 'native', platform, id: rest };
}

/** What is wrong with an entry, or undefined (for bots.yaml's checks). */
export function identityProblem(entry: string): string | undefined {
  try {
    parseIdentity(entry);
    return undefined;
  } catch (error) {
    if (error instanceof IdentityError) return error.message;
    throw error;
  }
}

/** Whether the speaker is the one the identity names. E-mail addresses and user ids are chat members' only. */
export function matches(identity: Identity, speaker: Speaker): boolean {
  switch (identity.kind) {
    case 'chat':
      return speaker.platform === 'chat' && speaker.id === identity.id;
    case 'email':
      return speaker.platform === 'chat' && !!speaker.email && speaker.email.trim().toLowerCase() === identity.address;
    case 'mask':
      return speaker.platform === identity.platform && identity.pattern.test(ircFold(speaker.id));
    case 'native':
      return speaker.platform === identity.platform && speaker.id === identity.id;
  }
}

/** A speaker as cooldowns and logs know them: `chat:1001`, `irc:nick!user@host`, `slack:U…`. */
export function speakerKey(speaker: Speaker): string {
  return `${speaker.platform}:${speaker.id}`;
}

/** A list of identities, read once. */
export class IdentityList {
  private readonly identities: Identity[];

  /** `users:` entries (any form above) and `emails:` entries (addresses only). */
  constructor(users: readonly string[], emails: readonly string[] = []) {
    this.identities = [
      ...users.map(parseIdentity),
      ...emails.map((address): Identity => ({ kind: 'email', address: address.trim().toLowerCase() })),
    ];
  }

  /** How many identities the list holds. */
  get size(): number {
    return this.identities.length;
  }

  /** Whether the speaker is one of the listed identities. */
  includes(speaker: Speaker): boolean {
    return this.identities.some((identity) => matches(identity, speaker));
  }
}

/** `nick` → `nick!*@*`, `nick!user` → `nick!user@*`: a mask always has its three parts. */
function fullMask(mask: string): string {
  if (mask.includes('!')) return mask.includes('@') ? mask : `${mask}@*`;
  return mask.includes('@') ? mask.replace('@', '!*@') : `${mask}!*@*`;
}

/** The mask as an anchored pattern over the folded id: `*` any run, `?` one character. */
function maskPattern(mask: string): RegExp {
  const source = [...ircFold(mask)].map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[.+^${}()|[\]\\]/g, '\\$&'))).join('');
  return new RegExp(`^${source}$`, 's');
}

/** IRC's case folding (rfc1459): letters, and `[]\~` are the capitals of `{}|^`. */
function ircFold(text: string): string {
  return text.toLowerCase().replace(/[[\]\\~]/g, (char) => ({ '[': '{', ']': '}', '\\': '|', '~': '^' })[char]!);
}
