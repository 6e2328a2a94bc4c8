export { FakeSlack, type FakeSlackOptions } from './fake-slack.js';
export type { SentEnvelope } from './socket-mode.js';
export { APP_ID, BOT, TEAM, TOKENS, mentionsIn, rendered, type FakeChannel, type FakeUser } from './state.js';
export type { ApiCall, Change, Fault, Posted, StoredMessage } from './web-api.js';
export type { FakeFile, FakeFiles, Shared } from './files.js';
