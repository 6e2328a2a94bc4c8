import { join } from 'node:path';
import {
  attributedLines, DurableQueue, failureFields, fileLines, GroupPoster, oneLineName, receiveUntilTaken, sleep,
  type ActivityLogEntry, type GroupsError, type IncomingFile, type IncomingMessage, type Message, type OutgoingMessage, type PluginEnv, type PluginInstance, type PluginStatus,
} from '../../src/index.js';
import { ActivityFollower } from './activity-follower.js';
import { ArchiveFollower, type GroupFacts } from './archive-follower.js';
import { type GroupMailOptions } from './options.js';
import { GroupOutbound, type GroupLine } from './outbound.js';
import { activityText, fill, isReply, messageFields, oneLine, startOf } from './render.js';
import { TopicThreads } from './topic-threads.js';

type State = 'connecting' | 'connected' | 'stopped';

/** One group the endpoint watches: its archive (when a gateway names it) and activity families. */
interface Watch {
  group: string;
  archive?: ArchiveFollower;
  activity: ActivityFollower[];
}

/**
 * The group-mail endpoint: one polling loop per group (archive and activity log read together), fast
 * after activity and slower while quiet, and the queue of lines to post into groups.
 */
export class MailEndpoint {
  private readonly stopper = new AbortController();
  private readonly counters = {
    polls: 0, poll_errors: 0, announced: 0, replies_relayed: 0, moderation_relayed: 0, filtered: 0, own_skipped: 0,
    posted_to_group: 0, dropped: 0, post_retries: 0,
  };
  private readonly threads: TopicThreads;
  private readonly outbound: GroupOutbound;
  private readonly watches = new Map<string, Watch>();
  private state: State = 'connecting';
  private detail: string | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly options: GroupMailOptions,
    private readonly env: PluginEnv,
  ) {
    this.threads = new TopicThreads(env.store);
    const poster = new GroupPoster(env.client, env.store, { selfId: () => env.bot.userId, log: env.log, durable: () => env.storage.durable() });
    this.outbound = new GroupOutbound(
      DurableQueue.open<GroupLine>(join(env.dataDir, 'to-group.json'), {
        storage: env.storage,
        maxItems: options.queue_max,
        onHighWater: (size, max) => env.log.warn({ size, max }, 'the queue of lines to post into the group is filling up'),
      }),
      {
        poster, log: env.log, counters: this.counters, durable: () => env.storage.durable(),
        groupId: (channel) => this.watches.get(channel.toLowerCase())?.archive?.facts?.id,
        posted: (line, messageId) => env.gateway.posted(line.key, line.channel, messageId),
      },
    );
  }

  instance(): PluginInstance {
    return {
      start: () => {
        this.running ??= this.run();
      },
      stop: () => this.stop(),
      endpoint: { send: (channel, message) => this.send(channel, message) },
      stats: () => ({ ...this.counters, queued: this.outbound.size }),
      status: () => this.status(),
    };
  }

  private async run(): Promise<void> {
    for (const channel of this.env.gateway.channels()) {
      const moderation = channel.toLowerCase().endsWith('/moderation');
      const group = moderation ? channel.slice(0, -'/moderation'.length) : channel;
      const watch = this.watchOf(group);
      if (!moderation) {
        watch.archive ??= new ArchiveFollower(group, {
          client: this.env.client, store: this.env.store, log: this.env.log,
          hand: (message, facts) => this.handMessage(channel, message, facts),
        });
      } else if (watch.activity.length === 0) {
        const families = this.options.moderation.length > 0 ? this.options.moderation : (['mod'] as const);
        for (const family of families) {
          watch.activity.push(new ActivityFollower(group, family, {
            client: this.env.client, store: this.env.store, log: this.env.log,
            hand: (entry) => this.handActivity(channel, group, entry),
          }));
        }
      }
    }
    this.outbound.start();
    await Promise.all([...this.watches.values()].map((watch) => this.watch(watch)));
  }

  private watchOf(group: string): Watch {
    const key = group.toLowerCase();
    let watch = this.watches.get(key);
    if (!watch) {
      watch = { group, activity: [] };
      this.watches.set(key, watch);
    }
    return watch;
  }

  /**
   * Polls one group until stopped: again after `poll.min` when the read found something, the pause
   * doubling while nothing happens up to `poll.max`; a refusal or an unreachable service waits longer,
   * at least what a 429's Retry-After asked (the client already waited it out on its own retries).
   */
  private async watch(watch: Watch): Promise<void> {
    const { min, max } = this.options.poll;
    const signal = this.stopper.signal;
    let pause = min;
    while (!signal.aborted) {
      this.counters.polls += 1;
      try {
        let found = watch.archive ? await watch.archive.poll(signal) : 0;
        for (const follower of watch.activity) found += await follower.poll(signal);
        // The group's id is known now: lines waiting to be posted into it can go.
        this.outbound.nudge();
        this.connected();
        pause = found > 0 ? min : Math.min(max, pause * 2);
      } catch (error) {
        if (signal.aborted) return;
        this.counters.poll_errors += 1;
        const retryAfter = (error as Partial<GroupsError>).retryAfterSeconds;
        pause = Math.max(Math.min(max, pause * 2), (retryAfter ?? 0) * 1000);
        this.trouble(`reading ${watch.group}: ${(error as Error).message}`);
        this.env.log.warn({ group: watch.group, retry_in_ms: pause, ...failureFields(error) }, 'could not read the group; trying again');
      }
      await sleep(pause, signal);
    }
  }

  /** An archive message for the gateways of `channel`, unless the options leave it out. */
  private async handMessage(channel: string, message: Message, facts: GroupFacts): Promise<void> {
    // The bot's own posts came from a gateway (or a command) and were told there already.
    if (message.user_id === this.env.bot.userId) {
      this.counters.own_skipped += 1;
      return;
    }
    const reply = isReply(message);
    const tags = this.options.hashtags;
    if ((reply && this.options.follow === 'topics') ||
      (tags.length > 0 && !(message.hashtags ?? []).some((tag) => tags.includes(tag.name.toLowerCase())))) {
      this.counters.filtered += 1;
      return;
    }
    const fields = messageFields(message, { group: channel, groupUrl: facts.url, snippetLength: this.options.snippet_length, link: this.options.link });
    const text = oneLine(fill(reply ? this.options.reply_template : this.options.topic_template, { ...fields }));
    const replyTo = reply ? this.threads.get(channel, message.topic_id) : undefined;
    const name = fields.author;
    const line: IncomingMessage = {
      kind: 'message', text, nativeId: message.id, time: message.created,
      speaker: { platform: 'mail', id: message.user_id, name },
      chatText: attributedLines(text, (line) => fill(this.options.incoming, { name: oneLineName(name), text: line })),
      // A reply that names its topic (the default `re: {subject} — …`) needs no quote of the announcement
      // before it where there are no threads: on IRC and in the chat that would say the topic twice.
      ...(replyTo ? { replyTo, ...(this.options.reply_template.includes('{subject}') ? { namesParent: true } : {}) } : {}),
      ...(message.attachments?.length ? { files: message.attachments.map((file) => this.fileOf(file)) } : {}),
    };
    await receiveUntilTaken(this.env.gateway, channel, line, { stopping: this.stopper.signal });
    if (reply) this.counters.replies_relayed += 1;
    else {
      this.threads.remember(channel, message.topic_id, message.id);
      this.counters.announced += 1;
    }
  }

  /**
   * An archive message's attachment for the gateways (docs/plugins/group-mail.md "Files"): read through
   * its `download_url` with the bot's own session, and only when that URL is the service's own
   * (client.openAttachment refuses any other host, so a message cannot make the bot fetch elsewhere).
   */
  private fileOf(file: Message['attachments'][number]): IncomingFile {
    return {
      name: file.filename,
      ...(file.media_type ? { contentType: file.media_type } : {}),
      open: (signal) => this.env.client.openAttachment(file.download_url, { signal }),
    };
  }

  private async handActivity(channel: string, group: string, entry: ActivityLogEntry): Promise<void> {
    const text = activityText(entry, this.options.moderation_template, group);
    const line: IncomingMessage = {
      kind: 'message', text, nativeId: `activity:${entry.id}`, time: entry.created,
      speaker: { platform: 'mail', id: `activity:${group}`, name: group },
      chatText: attributedLines(text, (line) => fill(this.options.incoming, { name: oneLineName(group), text: line })),
    };
    await receiveUntilTaken(this.env.gateway, channel, line, { stopping: this.stopper.signal });
    this.counters.moderation_relayed += 1;
  }

  /** A gateway line for a group: queued durably as a topic of its own, or a reply where it answers an archive message. */
  private send(channel: string, message: OutgoingMessage): void {
    if (!this.options.post_to_group || channel.toLowerCase().endsWith('/moderation')) return;
    if (message.kind !== 'message' && message.kind !== 'action') return;
    // The bot's own voice (a command's answer, a notice) is for the chat, not the members' inboxes.
    if (message.speaker.platform === 'chat' && message.speaker.id === this.env.bot.userId) return;
    const name = message.speaker.name;
    // Files go as their links (a group message takes no attachments through the API): one line each after the text.
    const files = fileLines(message.files, message.refusedFiles);
    const said = message.text.trim() === '' && files.length > 0 ? files.join(' ') : message.text;
    const text = [message.kind === 'action' ? `* ${name} ${message.text}` : message.text, ...files].filter((line) => line.trim() !== '').join('\n');
    this.outbound.push({
      key: message.key, channel,
      subject: startOf(fill(this.options.post_subject, { name, platform: message.speaker.platform, start: startOf(said) }), 255),
      body: `${text}\n\n— ${name}, via ${message.speaker.platform}`,
      ...(message.replyTo ? { replyTo: message.replyTo } : {}),
    });
  }

  private connected(): void {
    if (this.state === 'stopped') return;
    if (this.state !== 'connected') this.env.log.info({ groups: [...this.watches.values()].map((w) => w.group) }, 'following the groups');
    this.state = 'connected';
    this.detail = undefined;
  }

  private trouble(detail: string): void {
    if (this.state === 'stopped') return;
    this.state = 'connecting';
    this.detail = detail;
  }

  private async stop(): Promise<void> {
    this.stopper.abort();
    this.state = 'stopped';
    await this.outbound.stop();
    await this.running;
  }

  private status(): PluginStatus {
    return { connection: { state: this.state, ...(this.detail ? { detail: this.detail } : {}) }, queues: { to_group: this.outbound.size } };
  }
}
