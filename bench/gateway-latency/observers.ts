import type WebSocket from 'ws';
import type { FakeSlack, Posted } from '../../test/fakes/slack/index.js';
import type { RawIrc } from '../lib/raw-irc.js';
import type { Marks } from './marks.js';

/**
 * The far ends the gateway bench watches, all in the bench process so that every time is read
 * from one clock: a chat member's socket, the fake Slack's record of chat.postMessage calls, and an
 * IRC client in a channel.
 */

/** A member's chat socket: every chat_message frame, stamped when the socket handed it over (before parsing). */
export function watchChat(socket: WebSocket, marks: Marks): void {
  socket.on('message', (data) => {
    const at = performance.now();
    const frame = JSON.parse(data.toString()) as { object?: string; message?: unknown };
    if (frame.object === 'chat_message' && typeof frame.message === 'string') marks.seen('chat', frame.message, at);
  });
}

/**
 * The fake Slack's accepted posts, stamped as the fake records each one (after it read the request,
 * before it answers): the moment a Slack client could first see the message. The fake keeps them in
 * a plain array and has no event for them, so the bench stamps that array's pushes; the fake itself
 * is untouched and answers as always.
 */
export function watchSlack(slack: FakeSlack, marks: Marks): void {
  const posts = slack.posts;
  const record = posts.push.bind(posts);
  posts.push = (...added: Posted[]): number => {
    const at = performance.now();
    for (const post of added) marks.seen('slack', post.text, at);
    return record(...added);
  };
}

/** An IRC client's channel (the second server of the IRC → IRC setups): every PRIVMSG, stamped with the time its chunk arrived. */
export function watchIrc(irc: RawIrc, marks: Marks): void {
  irc.onLine = (line, at) => {
    const said = /^(?:@\S+ )?:\S+ PRIVMSG \S+ :(.*)$/.exec(line);
    if (said) marks.seen('irc', said[1]!, at);
  };
}
