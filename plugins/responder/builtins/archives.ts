import { closeBidi } from '../../../src/index.js';
import type { Responder } from '../responder.js';
import { formatDate, htmlToText, shorten } from '../text.js';
import type { BuiltinSpecs } from './specs.js';

export interface ArchiveOptions {
  timeZone: string;
}

/**
 * `!topics [n]`, `!search <query…>`, `!activity [n]`: reading the group's archive and activity log.
 * The bot reads with its own access, so each is `readsGroup`: answered only to those who may read the
 * group (its members; sides outside it that bots.yaml's `reads_group` lists; see reads.ts).
 */
export function addArchives(responder: Responder, specs: BuiltinSpecs, options: ArchiveOptions): void {
  const when = (text: string | undefined) => formatDate(text, options.timeZone);

  if (specs.topics) {
    responder.command('topics', {
      ...specs.topics,
      readsGroup: true,
      description: 'the latest topics of the group',
      args: [{ name: 'n', type: 'int', min: 1, max: 20, default: 5, description: 'how many' }],
    }, async ({ ctx, args }) => {
      const list = await ctx.client.getTopics({ group_id: ctx.chat.groupId, limit: args.n as number });
      if (list.data.length === 0) return `${ctx.chat.groupName} has no topics yet.`;
      const lines = list.data.map((topic, i) =>
        `${i + 1}. ${closeBidi(topic.subject)} — ${topic.num_messages} message${topic.num_messages === 1 ? '' : 's'}, last ${when(topic.most_recent_message)}`);
      return [`Latest topics in ${ctx.chat.groupName}:`, ...lines].join('\n');
    });
  }

  if (specs.search) {
    responder.command('search', {
      ...specs.search,
      readsGroup: true,
      description: 'searches the group\'s archive ("exact words", #hashtag, posterid:<id>)',
      args: [{ name: 'query', type: 'rest', description: 'what to look for' }],
    }, async ({ ctx, args }) => {
      const q = String(args.query);
      const list = await ctx.client.searchArchives({ group_id: ctx.chat.groupId, q, limit: 5 });
      if (list.data.length === 0) return `Nothing in ${ctx.chat.groupName}'s archive matches ${closeBidi(q)}.`;
      const total = Number(list.total_count) || list.data.length;
      const lines = list.data.map((hit, i) =>
        `${i + 1}. ${closeBidi(hit.subject)} — ${closeBidi(hit.name)}, ${when(hit.created)}: ${closeBidi(shorten(htmlToText(hit.summary || hit.snippet || ''), 160))}`);
      return [`${total} result${total === 1 ? '' : 's'} for ${closeBidi(q)}${total > lines.length ? ` (the first ${lines.length})` : ''}:`, ...lines].join('\n');
    });
  }

  if (specs.activity) {
    responder.command('activity', {
      ...specs.activity,
      readsGroup: true,
      description: 'the group\'s recent activity log',
      args: [{ name: 'n', type: 'int', min: 1, max: 20, default: 5, description: 'how many entries' }],
    }, async ({ ctx, args }) => {
      // Refused without view_activity: describeError says so in words, with the service's type and extra.
      const list = await ctx.client.getActivityLog({ group_id: ctx.chat.groupId, limit: args.n as number });
      if (list.data.length === 0) return `${ctx.chat.groupName}'s activity log is empty.`;
      const lines = list.data.map((entry) => `${when(entry.created)} ${entry.action ? `${entry.action}: ` : ''}${closeBidi(htmlToText(entry.entry))}`);
      return [`Recent activity in ${ctx.chat.groupName}:`, ...lines].join('\n');
    });
  }
}
