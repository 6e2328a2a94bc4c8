import type { Chat } from '../../../src/index.js';
import { CommandError } from '../errors.js';
import type { Call, Responder } from '../responder.js';
import type { BuiltinSpecs } from './specs.js';

/**
 * `!close [chat]`, `!reopen <chat>`, `!subject <text…>`: chat moderation through updatechat. The
 * service lets only a chat's owner change it, so these work in chats the bot owns (made with
 * `create: true`); elsewhere they answer why not. Each declares the chat it acts on (`target`): the
 * responder checks `allow` (the chat's owner) against that chat and hands it over as call.target.
 */
export function addModeration(responder: Responder, specs: BuiltinSpecs): void {
  if (specs.close) {
    responder.command('close', {
      ...specs.close,
      description: 'closes this chat (or the one named)',
      args: [{ name: 'chat', type: 'rest', optional: true, description: 'another chat of the group, by subject or id' }],
      target: { chatArg: 'chat' },
    }, async (call) => {
      const { ctx } = call;
      const target = targetOf(call);
      if (target.is_closed) return `${target.subject} is already closed.`;
      requireOwned(call, target);
      if (target.id === ctx.chat.id) {
        // Said before closing: nobody can post into a closed chat, the bot included.
        await call.reply(`Closing this chat, as ${call.user} asked. ${responder.prefix}reopen ${target.subject} in another chat opens it again.`);
        await ctx.client.updateChat({ chat_id: target.id, is_closed: true });
        ctx.log.info({ chat: target.subject, by: call.userId }, 'responder: chat closed');
        return undefined;
      }
      await ctx.client.updateChat({ chat_id: target.id, is_closed: true });
      ctx.log.info({ chat: target.subject, by: call.userId }, 'responder: chat closed');
      return `Closed ${target.subject}.`;
    });
  }

  if (specs.reopen) {
    responder.command('reopen', {
      ...specs.reopen,
      description: 'reopens a closed chat of the group (say it in another chat)',
      args: [{ name: 'chat', type: 'rest', description: 'the chat, by subject or id' }],
      target: { chatArg: 'chat' },
    }, async (call) => {
      const target = targetOf(call);
      if (!target.is_closed) return `${target.subject} is open.`;
      requireOwned(call, target);
      await call.ctx.client.updateChat({ chat_id: target.id, is_closed: false });
      call.ctx.log.info({ chat: target.subject, by: call.userId }, 'responder: chat reopened');
      return `Reopened ${target.subject}.`;
    });
  }

  if (specs.subject) {
    responder.command('subject', {
      ...specs.subject,
      description: 'changes this chat\'s subject',
      args: [{ name: 'text', type: 'rest', description: 'the new subject' }],
      // This chat, always.
      target: {},
    }, async (call) => {
      const subject = String(call.args.text).trim();
      if (subject.length > 255) throw new CommandError('a subject is at most 255 characters.');
      const target = requireOwned(call, targetOf(call));
      await call.ctx.client.updateChat({ chat_id: target.id, subject });
      call.responder.access.forget(target.id);
      call.ctx.log.info({ chat: target.id, subject, by: call.userId }, 'responder: chat subject changed');
      return `The subject is now: ${subject}`;
    });
  }
}

/** The chat the command acts on, as the responder resolved it (and checked the caller's rights on). */
function targetOf(call: Call): Chat {
  if (!call.target) throw new TypeError(`${call.name}: declared no target`);
  return call.target;
}

/** updatechat is for the chat's owner only: the bot must own the chat. */
function requireOwned(call: Call, target: Chat): Chat {
  if (target.user_id !== call.ctx.bot.userId) {
    throw new CommandError(`only the owner of ${target.subject} may change it (the service allows no one else), and the bot does not own it.`);
  }
  return target;
}
