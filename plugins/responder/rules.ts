import type { AllowSpec } from './access.js';
import type { AnswerTo } from './answer.js';
import type { ArgSpec } from './args.js';
import type { CooldownSpec } from './cooldown.js';
import type { Call, Responder } from './responder.js';
import { Template, TemplateError, type TemplateValue } from './template.js';
import { formatDate } from './text.js';

/** The variables a reply template may use. */
export const TEMPLATE_VARIABLES = [
  'user', 'user_name', 'user_id', 'email', 'platform', 'chat', 'chat_id', 'group', 'group_id', 'bot', 'prefix', 'command', 'args', 'match',
  'message', 'msg_num', 'time', 'now',
] as const;

/** What is wrong with a rule's reply template, or undefined. */
export function templateProblem(source: string, kind: 'command' | 'keyword' | 'regex', argNames: readonly string[]): string | undefined {
  let template: Template;
  try {
    template = Template.compile(source);
  } catch (error) {
    if (error instanceof TemplateError) return error.message;
    throw error;
  }
  for (const path of template.variables()) {
    const [root, child] = path;
    if (!(TEMPLATE_VARIABLES as readonly string[]).includes(root!)) {
      return `unknown template variable {{${path.join('.')}}} (known: ${TEMPLATE_VARIABLES.join(', ')})`;
    }
    if (root === 'args' && kind !== 'command') return '{{args}} is only for command rules (keyword and regex rules have {{match}})';
    if (root === 'match' && kind === 'command') return '{{match}} is only for keyword and regex rules (command rules have {{args}})';
    if (root === 'args' && child !== undefined && !argNames.includes(child)) {
      return `{{args.${child}}}: the command has no argument ${child} (it has: ${argNames.join(', ') || 'none'})`;
    }
  }
  return undefined;
}

/**
 * What a template sees of a call. The sender's fields come from ctx.sender, not from the chat message:
 * a line relayed from IRC or Slack is the bot's message, and `{{user}}` is the person who said it.
 */
export function templateContext(call: Call, timeZone: string): Record<string, TemplateValue> {
  const { ctx, message, sender } = call;
  const member = sender.platform === 'chat';
  const match: TemplateValue = call.match
    ? { $text: call.match[0], ...Object.fromEntries(call.match.map((group, i) => [String(i), group])), ...call.match.groups }
    : undefined;
  return {
    user: call.user,
    user_name: member ? message.user_name : sender.name,
    user_id: call.userId,
    email: sender.email ?? '',
    platform: sender.platform,
    chat: ctx.chat.subject,
    chat_id: ctx.chat.id,
    group: ctx.chat.groupName,
    group_id: ctx.chat.groupId,
    bot: ctx.bot.name,
    prefix: call.responder.prefix,
    command: call.kind === 'command' ? call.name : undefined,
    args: { ...call.args, $text: call.argsText },
    match,
    message: ctx.text,
    msg_num: message.msg_num,
    time: formatDate(message.created, timeZone),
    now: formatDate(new Date().toISOString(), timeZone),
  };
}

/** A rule from bots.yaml, as checked by the options schema. */
export interface RuleConfig {
  command?: string;
  keyword?: string | string[];
  regex?: string;
  flags?: string;
  case_sensitive?: boolean;
  args?: ArgSpec[];
  aliases?: string[];
  hidden?: boolean;
  reply: string;
  description?: string;
  allow?: AllowSpec;
  cooldown?: CooldownSpec;
  chats?: string[];
  answer_to?: AnswerTo;
}

/** Adds bots.yaml's rules to a responder. */
export function addRules(responder: Responder, rules: readonly RuleConfig[], timeZone: string): void {
  for (const [index, rule] of rules.entries()) {
    const template = Template.compile(rule.reply);
    const answer = (call: Call) => template.render(templateContext(call, timeZone));
    const common = { allow: rule.allow, cooldown: rule.cooldown, chats: rule.chats, description: rule.description, answerTo: rule.answer_to };
    if (rule.command !== undefined) {
      responder.command(rule.command, { ...common, args: rule.args, aliases: rule.aliases, hidden: rule.hidden }, answer);
    } else if (rule.keyword !== undefined) {
      const words = Array.isArray(rule.keyword) ? rule.keyword : [rule.keyword];
      const alternatives = words.map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
      const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${alternatives})(?![\\p{L}\\p{N}_])`, rule.case_sensitive ? 'u' : 'iu');
      responder.hears(pattern, { ...common, name: `keyword rule ${index + 1} (${words.join(', ')})` }, answer);
    } else {
      responder.hears(new RegExp(rule.regex!, rule.flags ?? ''), { ...common, name: `regex rule ${index + 1} (/${rule.regex}/${rule.flags ?? ''})` }, answer);
    }
  }
}
