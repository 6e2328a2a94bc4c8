/**
 * groupwire's public API: what plugins and users' scripts import. Nothing else under src/ is a
 * promise to them.
 */
export * from './api/index.js';
export { LocalService, type LocalServiceOptions } from './service/local-service.js';
export type { IdStyle } from './service/ids.js';
