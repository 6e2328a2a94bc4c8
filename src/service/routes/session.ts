import { defineOp, EMPTY_OK, type Operation } from '../operation.js';

/**
 * `logout`: our extension, not the spec's (docs/protocol.md "Authentication"). It ends the session the
 * call authenticated with: its cookie, its API token and its csrf stop working at once, and the chat
 * hub closes the session's sockets. A POST like every call that changes state, so it needs the csrf
 * (a page of another site cannot log a member out).
 */
export const sessionOperations: Operation[] = [
  defineOp('logout', 'POST', ({ core, caller }) => {
    core.auth.endSession(caller.session);
    return EMPTY_OK;
  }),
];
