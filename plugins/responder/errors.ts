import {
  BadRequestError, explainError, GroupsError, InadequatePermissionsError, InvalidValueError, RateLimitError, ServerError, TransportError,
} from '../../src/index.js';
import { ArgumentError } from './args.js';

/** A failure meant for the user: its message is the answer, and it is logged at info only. */
export class CommandError extends Error {
  override name = 'CommandError';
}

/**
 * What to tell the user about an error in a command, in one short sentence, and whether it is worth
 * an error in the log (a bug or the service failing) rather than an info line (a user's mistake or a
 * permission the bot does not have). The service's refusals are said in words with their raw type and
 * extra kept (explainError): `The service refused the bot: only moderators can read the activity log
 * (inadequate_permissions: view_activity).`
 */
export function describeError(error: unknown): { text: string; serious: boolean } {
  if (error instanceof CommandError) return { text: error.message, serious: false };
  if (error instanceof ArgumentError) return { text: error.message, serious: false };
  // The bot's own standing, not the asker's: say whose permission is missing.
  if (error instanceof InadequatePermissionsError) return { text: `The service refused the bot: ${explainError(error)}.`, serious: false };
  if (error instanceof RateLimitError) return { text: `The service is busy right now: ${explainError(error)}.`, serious: false };
  if (error instanceof BadRequestError || error instanceof InvalidValueError) {
    return { text: `The service refused: ${explainError(error)}.`, serious: false };
  }
  if (error instanceof TransportError || error instanceof ServerError) {
    return { text: 'The service could not be reached; try again later.', serious: true };
  }
  if (error instanceof GroupsError) return { text: `The service answered with an error: ${explainError(error)}.`, serious: true };
  return { text: 'Something went wrong; the bot\'s log has the details.', serious: true };
}
