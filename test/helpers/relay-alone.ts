import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { FILE_STORAGE, type Attachment, type FileBytes, type IncomingMessage, type OutgoingMessage, type PluginEnv, type PluginInstance } from '../../src/index.js';
import { MediaStore } from '../../src/media/media-store.js';
import { KeyValueStore } from '../../src/store/kv-store.js';

/**
 * A relay plugin alone, without a supervisor (as test/http-api-out.test.ts does): its gateway port
 * records what it hands on, its media store is a real MediaStore in a temporary folder, and a
 * "restart" makes a new instance on the same state folder and store (the durable queue and its note
 * as a killed process left them). For the files of #34 before the gateway's intake reads them.
 */
export class RelayAlone {
  readonly dir = mkdtempSync(join(tmpdir(), 'groupwire-relay-alone-'));
  readonly media = new MediaStore(join(this.dir, 'media'), 'https://media.example.org/m');
  readonly store = KeyValueStore.memory();
  /** What the relay handed to the gateway, in order, with its channel. */
  readonly received: Array<{ channel: string; message: IncomingMessage }> = [];
  /** What the relay said it posted (key → native id). */
  readonly posted = new Map<string, string>();
  plugin: PluginInstance | undefined;

  constructor(
    private readonly create: (env: PluginEnv) => PluginInstance | Promise<PluginInstance>,
    private readonly channels: string[],
  ) {}

  async start(): Promise<PluginInstance> {
    const env = {
      dataDir: join(this.dir, 'state'), storage: FILE_STORAGE, store: this.store, configDir: this.dir, log: pino({ level: 'silent' }),
      stopping: new AbortController().signal, media: this.media,
      gateway: {
        channels: () => this.channels,
        receive: (channel: string, message: IncomingMessage) => {
          this.received.push({ channel, message });
          return Promise.resolve();
        },
        posted: (key: string, _channel: string, nativeId: string) => {
          this.posted.set(key, nativeId);
        },
        nativeOf: (key: string) => this.posted.get(key),
      },
    } as unknown as PluginEnv;
    this.plugin = await this.create(env);
    await this.plugin.start?.();
    return this.plugin;
  }

  /** Stops the instance (its calls aborted mid-way, as a kill leaves them) and starts a new one on the same state. */
  async restart(): Promise<PluginInstance> {
    await this.plugin?.stop?.();
    return this.start();
  }

  /** A file in the media store, as the gateway's intake would have put it. */
  async file(name: string, bytes: Buffer, contentType: string): Promise<Attachment> {
    return this.media.put(Readable.from([bytes]), { name, contentType, image: contentType.startsWith('image/') });
  }

  async close(): Promise<void> {
    await this.plugin?.stop?.();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A gateway line with files, as the gateway hands it to a relay. */
export function lineWithFiles(key: string, text: string, files: Attachment[], extra: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return {
    key, gateway: 'lobby', kind: 'message', text, files, speaker: { platform: 'irc', id: 'bob!b@example.org', name: 'Bob' },
    origin: { endpoint: 'irc:#lobby@bot/relay-irc', platform: 'irc', nativeId: key }, time: new Date().toISOString(), ...extra,
  } as unknown as OutgoingMessage;
}

/** All of a stream's bytes. */
export async function bytesOf(stream: FileBytes): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}
