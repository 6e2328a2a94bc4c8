import { describe, expect, test } from 'vitest';
import { adversarialTexts, expectLinearOnAdversarialText, LINEAR_BOUND_MS } from './helpers/adversarial-text.js';
import { outgoing } from './helpers/outgoing-everywhere.js';
import type { PluginContext } from '../src/pipeline/plugin.js';
import { chatLineOf, snippet, splitForChat } from '../src/gateway/render.js';
import { slackToPlain, unescapeSlack } from '../plugins/relay-slack/markup.js';
import { escapeForSlack, slackUsername } from '../plugins/relay-slack/escape.js';
import { chatName, renderEdit, renderForChat, renderForSlack } from '../plugins/relay-slack/render.js';
import { escapeForDiscord, plainFromDiscord, renderLine as discordLine, renderWebhookText } from '../plugins/relay-discord/render.js';
import { webhookUsername } from '../plugins/relay-discord/webhooks.js';
import { escapeHtml as matrixEscapeHtml, plainFromMatrix, renderLine as matrixLine, stripControls as matrixStripControls } from '../plugins/relay-matrix/render.js';
import { escapeForMattermost, overrideName, plainFromMattermost, renderLine as mattermostLine } from '../plugins/relay-mattermost/render.js';
import { escapeForZulip, plainFromZulip, renderLine as zulipLine } from '../plugins/relay-zulip/render.js';
import { aliasName, escapeForRocketchat, plainFromRocketchat, renderLine as rocketchatLine, renderText as rocketchatText } from '../plugins/relay-rocketchat/render.js';
import { chatLine as xmppChatLine, plainForXmpp, renderLine as xmppLine, splitAction } from '../plugins/relay-xmpp/render.js';
import { isOneUrl } from '../plugins/relay-xmpp/inbound.js';
import { parseMxc } from '../plugins/relay-matrix/media.js';
import { lineId, payloadOf, safeName as httpSafeName, safeText, stripControls as httpStripControls } from '../plugins/http-api/line.js';
import { escapeHtml as loggerEscapeHtml, escapeMarkdown, FORMATS, senderName } from '../plugins/logger/formats.js';
import { safeSegment } from '../plugins/logger/path-pattern.js';
import { tokenize, parseArgs } from '../plugins/responder/args.js';
import { splitMessage } from '../plugins/responder/split.js';
import { htmlToText as responderHtmlToText, shorten } from '../plugins/responder/text.js';
import { Template } from '../plugins/responder/template.js';
import { Responder } from '../plugins/responder/responder.js';
import { addRules } from '../plugins/responder/rules.js';
import { parseAnnouncement } from '../plugins/responder/builtins/announce.js';
import { activityText, fill as mailFill, isReply, oneLine, snippetOf, startOf, topicSubject, withoutBlockquotes } from '../plugins/group-mail/render.js';

/**
 * Issue #31, the class: every regular expression and text transform of the plugins, the gateway and
 * group-mail that sees text a user sent runs in linear time. Each is run on every 1 MiB adversarial shape
 * (test/helpers/adversarial-text.ts) and must stay under a bound no quadratic version can meet.
 *
 * Operators' own patterns (responder `regex:` rules, `hears` with a RegExp, identity masks) are the
 * operator's: a pattern that backtracks is theirs to fix (docs/bots.md). What is tested here are the
 * patterns and transforms the code brings: the built-in keyword and command matching runs on user text.
 */

const TIMEOUT = 240_000;
const never = (): never => { throw new Error('not expected'); };


const chatMessage = (text: string, extra: Record<string, unknown> = {}) =>
  ({ message: text, display_name: text, user_name: text, user_id: 1, msg_num: 1, created: '2024-01-01T00:00:00Z', ...extra }) as never;
const mailMessage = (text: string, plain: boolean) =>
  ({ body: text, subject: text, name: text, is_plain_text: plain, msg_num: 1, id: 'm', topic_id: 't', hashtags: [] }) as never;
const renderOptions = { timeZone: 'UTC', timeFormat: 'YYYY-MM-DD HH:mm' };
const slackDisplay = { username: '{name} ({chat})', avatars: true, default_icon: ':robot:', name_in_text: true } as never;


const transforms: Record<string, Record<string, (text: string) => unknown>> = {
  'relay-slack': {
    unescapeSlack, escapeForSlack, slackUsername, chatName,
    'renderForSlack': (text) => renderForSlack(outgoing(text), slackDisplay),
    'renderEdit': (text) => renderEdit(outgoing(text, 'edit'), slackDisplay),
    'renderForChat': (text) => renderForChat('<{name}> {text}', text, text, text),
  },
  'relay-discord': {
    escapeForDiscord, webhookUsername,
    'renderLine': (text) => discordLine('**{name}**: {text}', text, text),
    'plainFromDiscord': (text) => plainFromDiscord(text, new Map([['1', 'one']])),
    'renderWebhookText': (text) => renderWebhookText(text, { name: text, text }),
  },
  'relay-matrix': {
    'stripControls': matrixStripControls, 'escapeHtml': matrixEscapeHtml,
    'renderLine': (text) => matrixLine({ template: '{name}: {text}', msgtype: 'm.text', name: text, text, quote: { name: text, text } }),
    'renderLine action': (text) => matrixLine({ template: '{name}: {text}', msgtype: 'm.text', name: text, text, action: true }),
    'plainFromMatrix': (text) => plainFromMatrix(text, true),
    'plainFromMatrix reply fallback': (text) => plainFromMatrix(`> <${text}\n> ${text}\n\n${text}`, true),
    'parseMxc': (text) => parseMxc(`mxc://${text}`),
    'parseMxc server': (text) => parseMxc(`mxc://${text.replace(/\//g, '')}/x`),
  },
  'relay-mattermost': {
    escapeForMattermost, overrideName,
    'renderLine': (text) => mattermostLine({ template: '**{name}**: {text}', name: text, text }),
    'plainFromMattermost': (text) => plainFromMattermost(text, true),
  },
  'relay-zulip': {
    escapeForZulip,
    'renderLine': (text) => zulipLine({ template: '**{name}**: {text}', name: text, text, quote: { name: text, text } }),
    'renderLine action': (text) => zulipLine({ template: '**{name}**: {text}', name: text, text, action: true }),
    'plainFromZulip': (text) => plainFromZulip(text).text,
  },
  'relay-rocketchat': {
    escapeForRocketchat, aliasName, plainFromRocketchat,
    'renderLine': (text) => rocketchatLine({ template: '**{name}**: {text}', name: text, text, quote: { name: text, text } }),
    'renderText': (text) => rocketchatText({ text, action: true }),
  },
  'relay-xmpp': {
    plainForXmpp, splitAction,
    'renderLine': (text) => xmppLine('{name}: {text}', text, text),
    'chatLine': (text) => xmppChatLine('<{name}> {text}', text, text),
    'isOneUrl': (text) => isOneUrl(`https://${text}`),
  },
  'http-api line': {
    'stripControls': httpStripControls, safeText, lineId, 'safeName': (text) => httpSafeName(text),
    'payloadOf': (text) => payloadOf('c', outgoing(text), () => 'https://api.example/f'),
  },
  'logger formats': {
    'escapeHtml': loggerEscapeHtml, escapeMarkdown, safeSegment,
    'senderName': (text) => senderName(chatMessage(text)),
    ...Object.fromEntries(Object.values(FORMATS).flatMap((format) => [
      [`${format.name} entry`, (text: string) => format.entry(chatMessage(text), renderOptions)],
      [`${format.name} event entry`, (text: string) => format.entry(chatMessage(text, { type: 'chat_msg_type_join' }), renderOptions)],
      [`${format.name} header`, (text: string) => format.header({ group: text, chat: text, timeZone: 'UTC' })],
      [`${format.name} msgNumOf`, (text: string) => format.msgNumOf?.(format.entry(chatMessage(text), renderOptions).trimEnd())],
    ])),
  },
  'responder': {
    shorten: (text) => shorten(text, 300),
    'splitMessage': (text) => splitMessage(text),
    'tokenize': (text) => { try { return tokenize(text); } catch { return undefined; } },
    'parseArgs': (text) => { try { return parseArgs([{ name: 'n', type: 'int', optional: true }, { name: 'rest', type: 'rest', optional: true }], text); } catch { return undefined; } },
    'parseAnnouncement': (text) => { try { return parseAnnouncement(`${text}|${text}`); } catch { return undefined; } },
    'template render': (text) => Template.compile('{{ user | trim | upper }} said {{ message | lower | default: "x" }} {{ args.rest }}').render({ user: text, message: text, args: { rest: text } }),
  },
  'group-mail': {
    oneLine, startOf, withoutBlockquotes,
    'fill': (text) => mailFill(text, { subject: text }),
    'topicSubject': (text) => topicSubject(mailMessage(text, true)),
    'isReply': (text) => isReply(mailMessage(text, true)),
    'snippetOf plain': (text) => snippetOf(mailMessage(text, true), 200),
  },
  'gateway render': {
    snippet, splitForChat,
    'chatLineOf': (text) => {
      const record = { kind: 'message', text, speaker: { platform: 'irc', id: text, name: text } } as never;
      return chatLineOf(record, undefined, record, record);
    },
  },
};

describe('linear time on 1 MiB of adversarial text (#31): plugins, gateway, group-mail', () => {
  for (const [plugin, named] of Object.entries(transforms)) {
    for (const [name, transform] of Object.entries(named)) {
      test(`${plugin}: ${name}`, () => expectLinearOnAdversarialText(transform), TIMEOUT);
    }
  }

  test('group-mail: snippetOf HTML, activityText; responder: htmlToText (through src/api/html-text.ts)', () => {
    expectLinearOnAdversarialText((text) => snippetOf(mailMessage(text, false), 200));
    expectLinearOnAdversarialText((text) => activityText({ entry: text, action: text } as never, '{entry} ({action})', 'g'));
    expectLinearOnAdversarialText(responderHtmlToText);
  }, TIMEOUT);

  test('relay-slack: slackToPlain (asynchronous: names looked up)', async () => {
    const names = { user: async () => undefined, channel: async () => 'general' };
    await slackToPlain('warm <@U1> &amp;', names);
    for (const [shape, text] of Object.entries(adversarialTexts())) {
      const started = performance.now();
      await slackToPlain(text, names);
      const ms = performance.now() - started;
      expect(ms, `${shape}: ${Math.round(ms)} ms for 1 MiB`).toBeLessThan(LINEAR_BOUND_MS);
    }
  }, TIMEOUT);

  test('responder: command and keyword matching on what members say', async () => {
    const responder = new Responder();
    responder.command('topics', () => 'x');
    responder.hears('good morning', () => 'x');
    addRules(responder, [{ keyword: ['hello there', 'a+b'], reply: 'hi' } as never], 'UTC');
    const handled = (text: string) => {
      let passed = false;
      void responder.handle({ answerable: true, message: { type: 'chat_msg_type_normal' }, text, chat: { id: 1 } } as unknown as PluginContext, async () => { passed = true; });
      return passed || never();
    };
    expectLinearOnAdversarialText(handled);
    expectLinearOnAdversarialText((text) => handled(`!nosuch ${text}`));
  }, TIMEOUT);
});
