import { FakeSlack, TOKENS } from '../../test/fakes/slack/index.js';
import { FakeDiscord } from '../../test/helpers/fake-discord.js';
import { FakeMatrix } from '../../test/helpers/fake-matrix.js';
import { FakeTelegram } from '../../test/helpers/fake-telegram.js';

/**
 * The fakes of the files bench (bench/gateway-files.ts), all in the bench's process: the fake Slack
 * where the file is said, and the fake Discord, Matrix homeserver and Telegram Bot API that take it.
 * Each file-taking fake has two places: the gateway's (the bot's relays map it) and the bare client's
 * (no relay maps it, so the bot never sees the bare uploads). Every arrival is stamped as the fake
 * keeps the file's message, its bytes compared with what was said.
 */

export const SLACK_CHANNEL = 'C0GENERAL1';
export const SLACK_PERSON = 'U0ALICE001';
export const FILE_SIDES = ['discord', 'matrix', 'telegram'] as const;
export type FileSide = typeof FILE_SIDES[number];

const DISCORD = { gateway: '700000000000000077', bare: '700000000000000078' };
const TELEGRAM = { gateway: -1001000000099, bare: -1001000000098 };

/** Where one file (known by its tag, the name without `.png`) arrived: per side, when and whether its bytes were the file's. */
export interface Arrival {
  at: number;
  bytesMatch: boolean;
}

/** A file's tag from its name (`g3-1a2b.png` → `g3-1a2b`). */
export function tagOf(name: string): string {
  return name.replace(/\.png$/, '');
}

export class FileSides {
  /** The bytes each tag was said with (set before the file is said). */
  private readonly expected = new Map<string, Buffer>();
  private readonly arrivals = new Map<string, Partial<Record<FileSide, Arrival>>>();
  private readonly waiters = new Set<() => void>();

  private constructor(
    readonly slack: FakeSlack,
    readonly discord: FakeDiscord,
    readonly matrix: FakeMatrix,
    readonly telegram: FakeTelegram,
    private readonly matrixUsers: { bot: { userId: string; token: string }; bare: { userId: string; token: string } },
    private readonly rooms: { gateway: string; bare: string },
  ) {
    this.watch();
  }

  static async start(maxUpload: number): Promise<FileSides> {
    const slack = await FakeSlack.start();
    const discord = await FakeDiscord.start();
    discord.addChannel(DISCORD.gateway);
    discord.addChannel(DISCORD.bare);
    // A boosted server's limit (50 MB at level 2), so that the store's 25 MB file goes natively too.
    discord.maxUpload = maxUpload;
    const matrix = await FakeMatrix.start();
    matrix.uploadLimit = maxUpload;
    const bot = matrix.addUser('groupwire', 'groupwire bot');
    const bare = matrix.addUser('bare', 'bare client');
    const rooms = { gateway: matrix.addRoom('bench', { members: [bot.userId] }), bare: matrix.addRoom('bare', { members: [bare.userId] }) };
    const telegram = await FakeTelegram.start();
    telegram.addChat({ id: TELEGRAM.gateway, type: 'supergroup', title: 'bench' });
    telegram.addChat({ id: TELEGRAM.bare, type: 'supergroup', title: 'bare' });
    return new FileSides(slack, discord, matrix, telegram, { bot, bare }, rooms);
  }

  /** The bot's relays (bots.yaml `plugins`): Slack's and those of the file-taking sides `only` names, their channels left to the gateway. */
  plugins(maxFileSize: number, only: readonly FileSide[] = FILE_SIDES): unknown[] {
    const relays: Record<FileSide, unknown> = {
      discord: { use: 'relay-discord', with: { token: this.discord.token, api_url: this.discord.apiUrl, channels: {}, max_file_size: maxFileSize } },
      matrix: { use: 'relay-matrix', with: { homeserver: this.matrix.url, access_token: this.matrixUsers.bot.token, user_id: this.matrixUsers.bot.userId, rooms: {} } },
      // Telegram's pacing is not what is measured (as in the platforms bench).
      telegram: { use: 'relay-telegram', with: { token: this.telegram.token, api_url: this.telegram.url, chats: {}, rate: 'off' } },
    };
    return [
      { use: 'relay-slack', with: { token: TOKENS.bot, app_token: TOKENS.app, api_url: this.slack.apiUrl, channels: {} } },
      ...only.map((side) => relays[side]),
    ];
  }

  /** The gateway's endpoints besides the chat: Slack and the file-taking sides `only` names (all three by default). */
  endpoints(only: readonly FileSide[] = FILE_SIDES): Array<Record<string, string>> {
    const places: Record<FileSide, Record<string, string>> = { discord: { discord: DISCORD.gateway }, matrix: { matrix: this.rooms.gateway }, telegram: { telegram: String(TELEGRAM.gateway) } };
    return [{ slack: SLACK_CHANNEL }, ...only.map((side) => places[side])];
  }

  /** What the bare client needs to upload to its own places. */
  bareTargets() {
    return {
      discord: { apiUrl: this.discord.apiUrl, token: this.discord.token, channel: DISCORD.bare },
      matrix: { homeserver: this.matrix.url, token: this.matrixUsers.bare.token, room: this.rooms.bare },
      telegram: { apiUrl: this.telegram.url, token: this.telegram.token, chat: TELEGRAM.bare },
    };
  }

  /** Says a file on Slack (a person shares it with a line of text): answers its url_private_download. */
  sayOnSlack(name: string, bytes: Buffer): string {
    const { file } = this.slack.shareFile(SLACK_CHANNEL, SLACK_PERSON, 'a picture', { name, mimetype: 'image/png', bytes });
    return String(this.slack.files.object(file).url_private_download);
  }

  /** A person's file kept on the fake Slack without a message (for the bare client's download); answers its url_private_download. */
  keepOnSlack(name: string, bytes: Buffer): string {
    return String(this.slack.files.object(this.slack.files.add(SLACK_PERSON, { name, mimetype: 'image/png', bytes })).url_private_download);
  }

  expect(tag: string, bytes: Buffer): void {
    this.expected.set(tag, bytes);
    this.arrivals.set(tag, {});
  }

  /** Resolves when the file has arrived on these sides (all three by default; or rejects after `timeoutMs`); answers the arrivals. */
  async arrived(tag: string, timeoutMs: number, on: readonly FileSide[] = FILE_SIDES): Promise<Partial<Record<FileSide, Arrival>>> {
    const done = () => {
      const seen = this.arrivals.get(tag);
      return seen && on.every((side) => seen[side]) ? seen : undefined;
    };
    let wake: () => void = () => {};
    const timer = new Promise<never>((_, fail) => {
      const t = setTimeout(() => fail(new Error(`${tag}: not on ${on.filter((side) => !this.arrivals.get(tag)?.[side]).join(', ')} after ${timeoutMs} ms`)), timeoutMs);
      wake = () => clearTimeout(t);
    });
    try {
      for (;;) {
        const all = done();
        if (all) return all;
        await Promise.race([new Promise<void>((resolve) => {
          const waiter = () => {
            this.waiters.delete(waiter);
            resolve();
          };
          this.waiters.add(waiter);
        }), timer]);
      }
    } finally {
      wake();
      this.forget(tag);
    }
  }

  private forget(tag: string): void {
    this.expected.delete(tag);
  }

  private seen(side: FileSide, name: string, bytes: Buffer | undefined, at: number): void {
    const tag = tagOf(name);
    const expected = this.expected.get(tag);
    const record = this.arrivals.get(tag);
    if (!expected || !record || record[side]) return;
    record[side] = { at, bytesMatch: bytes !== undefined && bytes.equals(expected) };
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Stamps each fake as it keeps a file's message: the moment a client there could first see it. */
  private watch(): void {
    // Discord: attachments are kept as the message is made (webhook or bot post, multipart files[n]).
    const attach = this.discord.files.attach.bind(this.discord.files);
    this.discord.files.attach = (channelId, upload) => {
      const kept = attach(channelId, upload);
      const at = performance.now();
      for (const attachment of kept) this.seen('discord', attachment.filename, this.discord.files.stored.get(attachment.id)?.bytes, at);
      return kept;
    };
    // Matrix: the m.image event that carries the uploaded file's mxc:// URI.
    const send = this.matrix.send.bind(this.matrix);
    this.matrix.send = (...args: Parameters<FakeMatrix['send']>) => {
      const event = send(...args);
      const content = event.content as { url?: unknown; filename?: unknown; body?: unknown };
      if (event.type === 'm.room.message' && typeof content.url === 'string') {
        this.seen('matrix', String(content.filename ?? content.body), this.matrix.mediaOf(content.url)?.bytes, performance.now());
      }
      return event;
    };
    // Telegram: sendPhoto or sendDocument kept the upload and made its message.
    const uploads = this.telegram.uploads;
    const record = uploads.push.bind(uploads);
    uploads.push = (...added) => {
      const at = performance.now();
      for (const upload of added) this.seen('telegram', upload.filename, upload.bytes, at);
      return record(...added);
    };
  }

  async close(): Promise<void> {
    await this.slack.close();
    await this.discord.close();
    await this.matrix.close();
    await this.telegram.close();
  }
}
