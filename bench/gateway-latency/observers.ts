import type WebSocket from 'ws';
import type { FakeSlack, Posted } from '../../test/fakes/slack/index.js';
import type { Marks } from './marks.js';

/**
 * The two far ends the gateway bench watches, both in the bench process so that every time is read
 * from one clock: a chat member's socket, and the fake Slack's record of chat.postMessage calls.
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
