import { randomBytes } from 'node:crypto';
import type { IrcMessage } from 'irc-framework';
import type { ConfirmMode } from './irc-link.js';
import { ircLower } from './routes.js';

/** What the server's answers mean for the lines sent. */
export interface DeliveryOutcomes {
  /** The server took this line (its labeled echo, or an ACK); `msgid` is the echo's IRCv3 id, when it has one. */
  delivered(ticket: number, msgid?: string): void;
  /** The server has handled every line up to this ticket (the PONG to a PING sent after them). */
  deliveredUpTo(ticket: number): void;
  /** The server refused a line: the ticket when it says which (labeled), else the channel. */
  refused(where: { ticket?: number; channelKey?: string }, reason: string): void;
}

/** The smallest window of unconfirmed lines whose confirming PING may go outside the pacing (at most 1 command in 11 more). */
const FREE_PING_WINDOW = 10;

/** Numerics a refused PRIVMSG gets (cannot send, no such nick/channel, not on channel, must be registered, TLS only). */
const SEND_REFUSALS = new Set(['401', '403', '404', '442', '477', '489']);

/**
 * Tells when a line sent to IRC has arrived, so the queue drops it only then.
 *
 * With IRCv3 `labeled-response` and `echo-message` (mode `labeled`), each PRIVMSG carries a label and
 * the server answers that label with the echoed message (delivered), an error numeric (refused) or a
 * batch holding either. Otherwise (mode `barrier`) a PING goes out after the lines: a server handles a
 * client's commands in order, so its PONG means every line before the PING was handled, and a refusal
 * numeric naming a channel means one of that channel's unconfirmed lines was refused.
 */
export class DeliveryTracker {
  private mode: ConfirmMode = 'barrier';
  private nextTicket = 1;
  private lastSent = 0;
  private lastCovered = 0;
  private readonly tag = `gw${randomBytes(3).toString('hex')}`;
  private readonly labels = new Map<string, number>();
  private readonly batches = new Map<string, { ticket: number; echoed: boolean; msgid?: string; refusal?: string }>();
  private readonly barriers = new Map<string, number>();

  constructor(private readonly outcomes: DeliveryOutcomes) {}

  /** A new connection: answers to anything sent on the old one will not come. */
  reset(mode: ConfirmMode): void {
    this.mode = mode;
    this.labels.clear();
    this.batches.clear();
    this.barriers.clear();
    this.lastCovered = this.lastSent;
  }

  /**
   * A ticket for a line about to be sent, and the command that sends it; `replyTo` (an IRC msgid, on a
   * server that takes client tags) goes as IRCv3 `+draft/reply`.
   */
  line(channel: string, text: string, replyTo?: string): { ticket: number; command: string } {
    const ticket = this.nextTicket++;
    this.lastSent = ticket;
    const tags: string[] = [];
    if (this.mode === 'labeled') {
      const label = `${this.tag}.${ticket}`;
      this.labels.set(label, ticket);
      tags.push(`label=${label}`);
    }
    if (replyTo !== undefined && /^[^\s;\\]+$/.test(replyTo)) tags.push(`+draft/reply=${replyTo}`);
    return { ticket, command: `${tags.length > 0 ? `@${tags.join(';')} ` : ''}PRIVMSG ${channel} :${text}` };
  }

  /**
   * In barrier mode, whether a confirmation PING is due, and whether it takes a token of the pacing.
   * `window` is how many lines may await confirmation; `idle` says nothing else can be sent now.
   *
   * - `window` lines unconfirmed: the window is full, the lines behind it wait for this PONG. The PING
   *   goes at once, outside the pacing: it costs no line its token, and there is at most one per
   *   `window` lines (5% more commands at the default 20), well inside any server's flood allowance.
   *   A window under FREE_PING_WINDOW lines would make that share too large: the PING is paced then.
   * - fewer, and nothing else to send: the PING waits for a token like a line (no line wants it).
   * - otherwise none: one PING per burst of lines, not per small group (each PING is a command the
   *   server's flood penalty counts, ngircd's too, and under the bucket it would take a line's token).
   */
  barrierDue(window: number, idle: boolean): 'none' | 'free' | 'paced' {
    const uncovered = this.lastSent - this.lastCovered;
    if (this.mode !== 'barrier' || uncovered === 0) return 'none';
    if (uncovered >= window) return window >= FREE_PING_WINDOW ? 'free' : 'paced';
    return idle ? 'paced' : 'none';
  }

  /** The PING that confirms every line sent so far. */
  barrier(): string {
    const token = `${this.tag}.b${this.lastSent}`;
    this.barriers.set(token, this.lastSent);
    this.lastCovered = this.lastSent;
    return `PING :${token}`;
  }

  onMessage(message: IrcMessage): void {
    const label = typeof message.tags.label === 'string' ? message.tags.label : undefined;
    const ticket = label === undefined ? undefined : this.labels.get(label);
    if (label !== undefined && ticket !== undefined) {
      this.labels.delete(label);
      if (message.command === 'BATCH' && message.params[0]?.startsWith('+')) {
        this.batches.set(message.params[0].slice(1), { ticket, echoed: false });
      } else if (isRefusal(message)) {
        this.outcomes.refused({ ticket }, describe(message));
      } else {
        this.outcomes.delivered(ticket, msgidOf(message));
      }
      return;
    }
    const batchId = typeof message.tags.batch === 'string' ? message.tags.batch : undefined;
    const batch = batchId === undefined ? undefined : this.batches.get(batchId);
    if (batch) {
      if (message.command === 'PRIVMSG' || message.command === 'NOTICE') {
        batch.echoed = true;
        batch.msgid ??= msgidOf(message);
      }
      else if (isRefusal(message)) batch.refusal ??= describe(message);
      return;
    }
    if (message.command === 'BATCH' && message.params[0]?.startsWith('-')) {
      const ended = this.batches.get(message.params[0].slice(1));
      if (!ended) return;
      this.batches.delete(message.params[0].slice(1));
      if (ended.refusal && !ended.echoed) this.outcomes.refused({ ticket: ended.ticket }, ended.refusal);
      else this.outcomes.delivered(ended.ticket, ended.msgid);
      return;
    }
    if (message.command === 'PONG') {
      const token = message.params.at(-1) ?? '';
      const upTo = this.barriers.get(token);
      if (upTo !== undefined) {
        this.barriers.delete(token);
        this.outcomes.deliveredUpTo(upTo);
      }
      return;
    }
    if (this.mode === 'barrier' && SEND_REFUSALS.has(message.command) && message.params[1]) {
      this.outcomes.refused({ channelKey: ircLower(message.params[1]) }, describe(message));
    }
  }
}

function msgidOf(message: IrcMessage): string | undefined {
  return typeof message.tags.msgid === 'string' && message.tags.msgid !== '' ? message.tags.msgid : undefined;
}

function isRefusal(message: IrcMessage): boolean {
  return /^[45]\d\d$/.test(message.command) || message.command === 'FAIL';
}

function describe(message: IrcMessage): string {
  return `${message.command} ${message.params.slice(1).join(' ')}`.trim();
}
