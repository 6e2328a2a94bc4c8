import type { Logger } from 'pino';
import type { MediaConfig } from '../config/bots-config.js';
import { FileIntake } from '../gateway/file-intake.js';
import { MediaServer } from '../media/media-server.js';
import { MediaStore } from '../media/media-store.js';
import { MediaRetention } from '../media/media-retention.js';

/**
 * The process's media (bots.yaml `media:`, docs/gateways.md "Files"): one store for every bot and
 * gateway, the intake that reads files into it under the limits, its listener when `listen` is set,
 * and the retention sweep. Built once by the supervisor; relays get the store as `env.media`.
 */
export class MediaSetup {
  private constructor(
    readonly store: MediaStore,
    readonly intake: FileIntake,
    private readonly server: MediaServer | undefined,
    private readonly retention: MediaRetention,
  ) {}

  /** `dir`: the store's folder as resolved (bots.yaml's `media.dir`, else `<state_dir>/media`). */
  static async start(config: MediaConfig, dir: string, log: Logger): Promise<MediaSetup> {
    const store = new MediaStore(dir, config.public_url);
    const intake = new FileIntake(store, { maxSize: config.max_size, denyTypes: config.deny_types, stallMs: config.stall_timeout * 1000 }, log.child({ component: 'files' }));
    const retention = new MediaRetention(dir, config.retention_days * 24 * 3600 * 1000, log.child({ component: 'media-retention' }));
    retention.start();
    let server: MediaServer | undefined;
    if (config.listen) {
      server = new MediaServer(store, config.listen, log.child({ component: 'media' }));
      try {
        const url = await server.listen();
        // Links go to the listener itself unless the operator put something in front of it.
        store.linkBase ??= url;
        log.info({ url, links: store.linkBase }, 'media listener listening');
      } catch (error) {
        server = undefined;
        log.error({ err: error, listen: config.listen }, `the media listener could not listen on ${config.listen}: files are still stored and relayed natively, their links ${config.public_url ? 'point at public_url' : 'are left out'}`);
      }
    }
    return new MediaSetup(store, intake, server, retention);
  }

  /** The listener's own address, when it listens. */
  get url(): string | undefined {
    return this.server?.url;
  }

  async close(): Promise<void> {
    this.retention.stop();
    await this.server?.close();
  }
}
