/**
 * The chat socket's close codes, as docs/protocol.md "Chat data stream" decides them: the service
 * closes with these and clients read them.
 */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  abnormal: 1006,
  tooBig: 1009,
  serviceRestart: 1012,
  chatClosed: 4000,
  chatDeleted: 4001,
  chatSubRemoved: 4002,
  notMember: 4003,
  /** The socket's session ended (logout, or a newer login past the user's session cap). */
  sessionEnded: 4004,
  slowConsumer: 4009,
} as const;
