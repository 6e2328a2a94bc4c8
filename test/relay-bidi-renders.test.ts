import { describe, expect, test } from 'vitest';
import type { ChatInfo, ChatMessage, OutgoingMessage } from '../src/index.js';
import { renderLine as renderForDiscord, renderWebhookText } from '../plugins/relay-discord/render.js';
import { renderForIrc } from '../plugins/relay-irc/render.js';
import { ircToChatText } from '../plugins/relay-irc/format.js';
import { renderLine as renderForMatrix } from '../plugins/relay-matrix/render.js';
import { aliasName, renderLine as renderForRocketchat, renderText as renderRocketchatText } from '../plugins/relay-rocketchat/render.js';
import { relaySlackOptions } from '../plugins/relay-slack/options.js';
import { renderForSlack } from '../plugins/relay-slack/render.js';
import { renderLine as renderForXmpp } from '../plugins/relay-xmpp/render.js';
import { renderLine as renderForZulip } from '../plugins/relay-zulip/render.js';

/**
 * Issue #31 item 14 on the other sides of a gateway: each relay composes `<name> text` (and a quote
 * `name: snippet` where it cannot thread) for its platform; a right-to-left override in a name or a
 * quote ends with its field, before the relay's own text after it.
 */

const RLO = '\u202e';
const PDF = '\u202c';
const EVE = `${RLO}eve`;
const CLOSED_EVE = `${RLO}eve${PDF}`;

const chat: ChatInfo = { id: '17', subject: 'general', groupId: '1', groupName: 'demo', chatsubId: '5' };
const said = {
  object: 'chat_message', id: '1', created: '2024-01-01T00:00:00Z', version: 1, user_id: '9', group_id: '1', chat_id: '17',
  type: 'chat_msg_type_normal', message: 'hi', msg_num: 1, display_name: EVE, user_name: 'eve', profile_photo_url: '',
  profile_privacy: 'profile_members', email: '',
} as ChatMessage;

function line(fields: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return {
    key: 'k1', gateway: 'general', kind: 'message', text: 'hello', speaker: { platform: 'slack', id: 'U1', name: EVE },
    origin: { endpoint: 'slack:C1@bot/relay-slack', platform: 'slack', nativeId: '1' }, time: '2024-01-01T00:00:00Z',
    source: { chat, message: said }, ...fields,
  };
}

describe('bidi controls in names and quotes, relayed to each platform', () => {
  test('IRC: the name and the quote\'s name and snippet are closed; a line from IRC too', () => {
    const format = { template: '{prefix}<{name}> {text}', antiPing: false, roomBytes: 400, maxLines: 0 };
    expect(renderForIrc(line(), '', format)).toEqual([`<${CLOSED_EVE}> hello`]);
    const reply = renderForIrc(line({ speaker: { platform: 'slack', id: 'U2', name: 'bob' }, quote: { name: EVE, text: `${RLO}olleh` } }), '', format);
    expect(reply).toEqual([`<bob> (re ${CLOSED_EVE}: ${RLO}olleh${PDF}) hello`]);
    expect(ircToChatText('privmsg', 'eve', '#general', `${RLO}txt`, { privmsg: '<{nick}> {text} [{channel}]', action: '* {nick} {text}' }))
      .toBe(`<eve> ${RLO}txt${PDF} [#general]`);
  });

  test('Slack: the name in the text and the quote', () => {
    const display = { ...relaySlackOptions.parse({ token: 'xoxb-1', app_token: 'xapp-1', channels: { general: 'C0123456789' } }).display, name_in_text: true };
    expect(renderForSlack(line(), display).text).toBe(`*${CLOSED_EVE}*: hello`);
    expect(renderForSlack(line({ speaker: { platform: 'irc', id: 'b', name: 'bob' }, quote: { name: EVE, text: `${RLO}olleh` } }), display).text)
      .toBe(`> ${CLOSED_EVE}: ${RLO}olleh${PDF}\n*bob*: hello`);
  });

  test('Discord, Matrix, XMPP: the name before the text, and the quote', () => {
    expect(renderForDiscord('<{name}> {text}', EVE, 'hello')).toBe(`<${CLOSED_EVE}> hello`);
    expect(renderWebhookText('hello', { name: EVE, text: `${RLO}olleh` })).toBe(`> **${CLOSED_EVE}**: ${RLO}olleh${PDF}\nhello`);
    const matrix = renderForMatrix({ template: '<{name}> {text}', msgtype: 'm.text', name: EVE, text: 'hello', quote: { name: EVE, text: `${RLO}olleh` } });
    expect(matrix.body).toBe(`> ${CLOSED_EVE}: ${RLO}olleh${PDF}\n<${CLOSED_EVE}> hello`);
    expect(renderForXmpp('<{name}> {text}', EVE, 'hello')).toBe(`<${CLOSED_EVE}> hello`);
  });

  test('Zulip: the name before the text, and the quote where the line cannot stand in its parent\'s topic', () => {
    expect(renderForZulip({ template: '**{name}**: {text}', name: EVE, text: 'hello' })).toBe(`**${CLOSED_EVE}**: hello`);
    expect(renderForZulip({ template: '**{name}**: {text}', name: 'bob', text: 'hello', quote: { name: EVE, text: `${RLO}olleh` } }))
      .toBe(`\\> **${CLOSED_EVE}**: ${RLO}olleh${PDF}\n**bob**: hello`);
  });

  test('Rocket.Chat: the name before the text, the alias, and the quote', () => {
    expect(renderForRocketchat({ template: '<{name}> {text}', name: EVE, text: 'hello' })).toBe(`<${CLOSED_EVE}> hello`);
    expect(aliasName(EVE)).toBe(CLOSED_EVE);
    expect(renderRocketchatText({ text: 'hello', quote: { name: EVE, text: `${RLO}olleh` } })).toBe(`> **${CLOSED_EVE}**: ${RLO}olleh${PDF}\nhello`);
  });
});
