/** A mistake in how a command was called: exit code 2, with the message and a pointer to --help. */
export class UsageError extends Error {
  override name = 'UsageError';
}
