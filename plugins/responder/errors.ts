import {
  BadRequestError, GroupsError, InadequatePermissionsError, InvalidValueError, RateLimitError, ServerError, TransportError,
} from '../../src/index.js';
import { ArgumentError } from './args.js';

/** A failure meant for the user: its message is the answer, and it is logged at info only. */
export class CommandError extends Error {
  override name = 'CommandError';
}

/**
 * What to tell the user about an error in a command, in one short sentence, and whether it is worth
 * an error in the log (a bug or the service failing) rather than an info line (a user's mistake or a
 * permission the bot does not have).
 */
export function describeError(error: unknown): { text: string; serious: boolean } {
  if (error instanceof CommandError) return { text: error.message, serious: false };
  if (error instanceof ArgumentError) return { text: error.message, serious: false };
  if (error instanceof InadequatePermissionsError) {
    const what = error.extra === 'chat owner'
      ? 'only the chat\'s owner may do that, and the bot does not own this chat'
      : `the bot lacks the ${error.extra || 'needed'} permission in this group`;
    return { text: `The service refused: ${what}.`, serious: false };
  }
  if (error instanceof RateLimitError) return { text: 'The service is busy right now; try again in a minute.', serious: false };
  if (error instanceof BadRequestError || error instanceof InvalidValueError) {
    return { text: `The service refused: ${error.extra || error.type}.`, serious: false };
  }
  if (error instanceof TransportError || error instanceof ServerError) {
    return { text: 'The service could not be reached; try again later.', serious: true };
  }
  if (error instanceof GroupsError) return { text: `The service answered with an error (${error.type}).`, serious: true };
  return { text: 'Something went wrong; the bot\'s log has the details.', serious: true };
}
