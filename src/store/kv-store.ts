import { AtomicJsonFile } from './atomic-file.js';

/**
 * A small durable key-value store (one per plugin and bot): values are JSON, kept in memory and
 * written atomically to disk shortly after each change and on close.
 */
export class KeyValueStore {
  private data: Record<string, unknown> = {};

  private constructor(private readonly file: AtomicJsonFile<Record<string, unknown>>) {}

  static async open(path: string): Promise<KeyValueStore> {
    const file = new AtomicJsonFile<Record<string, unknown>>(path);
    const store = new KeyValueStore(file);
    store.data = (await file.read()) ?? {};
    return store;
  }

  /** An in-memory store (for tests and `groupwire check`). */
  static memory(): KeyValueStore {
    return new KeyValueStore(new AtomicJsonFile<Record<string, unknown>>(undefined));
  }

  get<T = unknown>(key: string): T | undefined {
    return this.data[key] as T | undefined;
  }

  set(key: string, value: unknown): void {
    this.data[key] = value;
    this.file.scheduleWrite(() => this.data);
  }

  delete(key: string): void {
    delete this.data[key];
    this.file.scheduleWrite(() => this.data);
  }

  keys(): string[] {
    return Object.keys(this.data);
  }

  flush(): Promise<void> {
    return this.file.flush();
  }
}
