import { GroupPoster, type PluginEnv } from '../../../src/index.js';
import { CommandError } from '../errors.js';
import type { Responder } from '../responder.js';
import type { BuiltinSpecs } from './specs.js';

/** The service's limit on a topic's subject. */
const MAX_SUBJECT = 255;

/** `Subject | body`: the first `|` splits; without one the whole text is both. */
export function parseAnnouncement(text: string): { subject: string; body: string } {
  const bar = text.indexOf('|');
  const subject = (bar < 0 ? text : text.slice(0, bar)).trim();
  const body = (bar < 0 ? text : text.slice(bar + 1)).trim();
  if (subject.length === 0) throw new CommandError('an announcement needs a subject: !announce Subject | body');
  if (subject.length > MAX_SUBJECT) throw new CommandError(`a subject is at most ${MAX_SUBJECT} characters (this one has ${subject.length}).`);
  if (body.length === 0) throw new CommandError('an announcement needs a body after the |: !announce Subject | body');
  return { subject, body };
}

/**
 * `!announce Subject | body`: a new topic in the chat's group, posted by the bot. It goes through
 * GroupPoster (drafts, one durable record per command message), so a command run again after a crash
 * or a lost answer finds what the first run made and never posts twice.
 */
export function addAnnounce(responder: Responder, specs: BuiltinSpecs, env: PluginEnv): void {
  if (!specs.announce) return;
  // One poster per responder: it serialises posts of one key and keeps its records in the plugin's store.
  const poster = new GroupPoster(env.client, env.store, {
    selfId: () => env.bot.userId,
    durable: () => env.storage.durable(),
    log: env.log,
  });
  responder.command('announce', {
    ...specs.announce,
    description: 'posts a new topic in the group: Subject | body',
    args: [{ name: 'text', type: 'rest', description: 'Subject | body' }],
  }, async ({ ctx, args, user, userId }) => {
    const { subject, body } = parseAnnouncement(String(args.text));
    // The key is the command message itself: the same message handed on again after a crash posts nothing new.
    const key = `announce:${ctx.chat.id}:${ctx.message.msg_num}`;
    // GroupPoster tries calls lost on the way again itself (each try finds what the one before made).
    let posted;
    try {
      posted = await poster.post({ key, groupId: ctx.chat.groupId, subject, body: `${body}\n\n— ${user}, from ${ctx.chat.subject}` });
    } catch (error) {
      // The failure is the answer and the command is not run again: its draft must not be left behind.
      const found = await poster.abandon(key).catch((failure: unknown) => {
        ctx.log.warn({ key, err: failure }, 'responder: could not delete the draft of a failed !announce');
        return undefined;
      });
      if (!found) throw error;
      posted = found;
    }
    ctx.log.info({ key, topic: posted.topicId, message: posted.messageId, by: userId, earlier: posted.earlier }, 'responder: announced');
    return `Announced in ${ctx.chat.groupName}: "${posted.subject}" (topic ${posted.topicId}, message #${posted.msgNum})`;
  });
}
