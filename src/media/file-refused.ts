/**
 * Thrown by an IncomingFile's `open()` when the platform itself will not give the file, with the reason
 * in words for the other sides (`Telegram bots cannot download files over 20 MB (this one is 22 MB)`).
 * The gateway shows that reason in its "a file was not relayed" line; any other error from `open()` is
 * logged and shown as "could not be read" (its message may name hosts or paths the other sides need
 * not see). `kind` is the reason counted in `groupwire_files_refused_total`.
 */
export class FileRefusedError extends Error {
  constructor(readonly reason: string, readonly kind: 'too_big' | 'denied_type' | 'read_failed' = 'read_failed') {
    super(reason);
    this.name = 'FileRefusedError';
  }
}
