import { describe, expect, test } from 'vitest';
import type { IrcMessage } from 'irc-framework';
import { DeliveryTracker } from '../plugins/relay-irc/delivery.js';

/**
 * The barrier rule (barrier mode, servers without labeled-response): how many confirmation PINGs a
 * burst of lines costs, and which of them take a token of the pacing. The pump is played the way
 * Outbound.run plays it: a line while the window has room, a PING when barrierDue says so.
 */
const pong = (token: string): IrcMessage => ({ command: 'PONG', params: ['irc.test', token], tags: {}, prefix: '', nick: '', ident: '', hostname: '' });

function drain(lines: number, window: number): { free: number; paced: number; confirmed: number } {
  let confirmed = 0;
  let flight = 0;
  const tracker = new DeliveryTracker({
    delivered: () => undefined,
    deliveredUpTo: (ticket) => {
      flight -= ticket - confirmed;
      confirmed = ticket;
    },
    refused: () => undefined,
  });
  tracker.reset('barrier');
  const pings = { free: 0, paced: 0 };
  let sent = 0;
  const answers: string[] = [];
  // The server answers a PING after the lines before it; its PONG arrives while the pump waits.
  for (let step = 0; step < 10 * lines + 10; step += 1) {
    const sendable = sent < lines && flight < window;
    const due = tracker.barrierDue(window, !sendable);
    if (due !== 'none') {
      pings[due] += 1;
      answers.push(tracker.barrier().slice('PING :'.length));
    } else if (sendable) {
      tracker.line('#g', `line ${sent}`);
      sent += 1;
      flight += 1;
    } else if (answers.length > 0) {
      tracker.onMessage(pong(answers.shift()!));
    } else {
      break;
    }
  }
  return { ...pings, confirmed };
}

describe('relay-irc barrier rule', () => {
  test('200 lines with a window of 20: one PING per window, none taking a line\'s token, all confirmed', () => {
    expect(drain(200, 20)).toEqual({ free: 10, paced: 0, confirmed: 200 });
  });

  test('a burst that ends inside a window: one more PING, paced like a line when nothing else waits', () => {
    expect(drain(45, 20)).toEqual({ free: 2, paced: 1, confirmed: 45 });
    expect(drain(3, 20)).toEqual({ free: 0, paced: 1, confirmed: 3 });
  });

  test('a small window (in_flight under 10): its PINGs are paced, so they cannot double the commands sent', () => {
    expect(drain(20, 1)).toEqual({ free: 0, paced: 20, confirmed: 20 });
    expect(drain(20, 5)).toEqual({ free: 0, paced: 4, confirmed: 20 });
  });

  test('no line, no PING; labeled mode never sends one', () => {
    expect(drain(0, 20)).toEqual({ free: 0, paced: 0, confirmed: 0 });
    const tracker = new DeliveryTracker({ delivered: () => undefined, deliveredUpTo: () => undefined, refused: () => undefined });
    tracker.reset('labeled');
    for (let i = 0; i < 50; i += 1) tracker.line('#g', `line ${i}`);
    expect(tracker.barrierDue(20, true)).toBe('none');
  });
});
