import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { FILE_STORAGE, type Attachment, type IncomingMessage, type OutgoingMessage, type PluginEnv } from '../../src/index.js';
import { MediaStore } from '../../src/media/media-store.js';
import { KeyValueStore } from '../../src/store/kv-store.js';
import { captureLog, type LogCapture } from './client.js';

/**
 * A relay plugin's env for testing its files alone (no supervisor, no gateway core): a state dir, a
 * real MediaStore in it (env.media), and a gateway port that keeps what the relay hands on
 * (`received`) and the native ids it tells (`posted`). Opening the plugin twice on one env is a
 * restart: the dir and the store are the same (what a kill -9 leaves on disk).
 */
export interface RelayFilesEnv {
  env: PluginEnv;
  dir: string;
  media: MediaStore;
  log: LogCapture;
  received: Array<{ channel: string; message: IncomingMessage }>;
  posted: Array<{ key: string; channel: string; nativeId: string }>;
  /** Keeps `bytes` in the media store, as the gateway's intake would (a public link when `publicUrl` is set). */
  stored(name: string, contentType: string, bytes: Buffer): Promise<Attachment>;
  close(): void;
}

export function relayFilesEnv(channels: string[], publicUrl = 'https://media.example/files'): RelayFilesEnv {
  const dir = mkdtempSync(join(tmpdir(), 'groupwire-relay-files-'));
  const media = new MediaStore(join(dir, 'media'), publicUrl);
  const log = captureLog();
  const received: RelayFilesEnv['received'] = [];
  const posted: RelayFilesEnv['posted'] = [];
  const store = KeyValueStore.memory();
  const env = {
    dataDir: dir, configDir: dir, storage: FILE_STORAGE, store, log: log.logger, stopping: new AbortController().signal, media,
    gateway: {
      channels: () => channels,
      receive: (channel: string, message: IncomingMessage) => {
        received.push({ channel, message });
        return Promise.resolve();
      },
      posted: (key: string, channel: string, nativeId: string) => void posted.push({ key, channel, nativeId }),
      nativeOf: (key: string, channel: string) => posted.find((p) => p.key === key && p.channel === channel)?.nativeId,
    },
  } as unknown as PluginEnv;
  return {
    env, dir, media, log, received, posted,
    stored: (name, contentType, bytes) => media.put(Readable.from([bytes]), { name, contentType, image: contentType.startsWith('image/') }),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A gateway line from a person elsewhere, with files (and any fields over the defaults). */
export function lineWithFiles(key: string, text: string, files: Attachment[], extra: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return {
    key, gateway: 'lobby', kind: 'message', text, speaker: { platform: 'irc', id: 'alice!a@example.org', name: 'alice' },
    origin: { endpoint: 'irc:#lobby@bot/relay-irc', platform: 'irc', nativeId: key }, time: new Date().toISOString(),
    files, source: {}, ...extra,
  };
}

/** Reads a file's bytes as the gateway's intake would: open(signal), every chunk. */
export async function readAll(bytes: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of bytes as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}
