import { describe, expect, test } from 'vitest';
import type { ChatInfo, ChatMessage, OutgoingMessage } from '../src/index.js';
import { ChannelMap } from '../plugins/relay-slack/channels.js';
import { slackTime } from '../plugins/relay-slack/inbound.js';
import { admit } from '../plugins/relay-slack/intake.js';
import { relaySlackOptions } from '../plugins/relay-slack/options.js';
import { planFor } from '../plugins/relay-slack/outgoing.js';
import { chatName, renderEdit, renderForChat, renderForSlack } from '../plugins/relay-slack/render.js';
import { mentionsIn } from './fakes/slack/index.js';

/** The relay's gateway parts without I/O: rendering a gateway line for Slack, planning what to send, admitting Slack events (threads, edits, deletions). */

const ZWJ = '\u200D';
const base = { token: 'xoxb-1', app_token: 'xapp-1', channels: { general: 'C0123456789' } };
const chat: ChatInfo = { id: '17', subject: 'general', groupId: '1', groupName: 'demo', chatsubId: '5' };

function message(fields: Partial<ChatMessage>): ChatMessage {
  return {
    object: 'chat_message', id: '1', created: '2024-01-01T00:00:00Z', version: 1, user_id: '9', group_id: '1', chat_id: '17',
    type: 'chat_msg_type_normal', message: 'hi', msg_num: 1, display_name: 'Bob Member', user_name: 'bob', profile_photo_url: '',
    profile_privacy: 'profile_members', email: '', ...fields,
  };
}

/** A gateway line as the core hands it (a chat member's message unless told otherwise). */
function line(fields: Partial<OutgoingMessage> = {}, said: Partial<ChatMessage> = {}): OutgoingMessage {
  return {
    key: 'k1', gateway: 'general', kind: 'message', text: 'hi', speaker: { platform: 'chat', id: '9', name: 'Bob Member' },
    origin: { endpoint: 'chat:17@bot', platform: 'chat', nativeId: '1' }, time: '2024-01-01T00:00:00Z',
    source: { chat, message: message(said) }, ...fields,
  };
}

const ircPerson = { speaker: { platform: 'irc', id: 'dan!d@host', name: 'dan' }, origin: { endpoint: 'irc:#general@bot/relay-irc', platform: 'irc', nativeId: 'i1' } };

describe('rendering', () => {
  const display = relaySlackOptions.parse(base).display;

  test('for Slack: name template, the member\'s photo or the default icon, name in text', () => {
    expect(renderForSlack(line({}, { profile_photo_url: 'https://img.example/b.png' }), display))
      .toEqual({ text: 'hi', username: 'Bob Member', icon_url: 'https://img.example/b.png' });
    expect(renderForSlack(line(), { ...display, default_icon: ':bust_in_silhouette:' }))
      .toEqual({ text: 'hi', username: 'Bob Member', icon_emoji: ':bust_in_silhouette:' });
    expect(renderForSlack(line({}, { profile_photo_url: 'https://img.example/b.png' }), { ...display, avatars: false, default_icon: 'https://img.example/d.png' }).icon_url)
      .toBe('https://img.example/d.png');
    expect(renderForSlack(line({ speaker: { platform: 'chat', id: '9', name: '@channel\nBob' }, text: '<@U1>' }), { ...display, username: '{name} ({user}) via {chat}', name_in_text: true }))
      .toMatchObject({ text: `*@${ZWJ}channel\nBob*: &lt;@U1&gt;`, username: `@${ZWJ}channel Bob (bob) via general` });
    expect([...renderForSlack(line({ speaker: { platform: 'chat', id: '9', name: 'n'.repeat(200) } }), display).username!]).toHaveLength(80);
  });

  test('for Slack: a person from elsewhere gets the default icon, never the photo of the chat message that carried the line', () => {
    const relayed = line({ ...ircPerson, text: 'from irc' }, { profile_photo_url: 'https://img.example/bot.png', user_name: 'bot' });
    expect(renderForSlack(relayed, { ...display, default_icon: ':speech_balloon:', username: '{name}/{user}' }))
      .toEqual({ text: 'from irc', username: 'dan/dan', icon_emoji: ':speech_balloon:' });
    expect(renderForSlack(relayed, display)).toEqual({ text: 'from irc', username: 'dan' });
  });

  test('for Slack: actions, files, quotes; nothing in any of them mentions anyone', () => {
    const post = (fields: Partial<OutgoingMessage>, options = display) => renderForSlack(line({ ...ircPerson, ...fields }), options).text;
    expect(post({ kind: 'action', text: 'waves at <!channel>' })).toBe('_dan waves at &lt;!channel&gt;_');
    expect(post({ text: 'see', files: [
      { id: 'a'.repeat(32), name: 'a<b>.png', contentType: 'image/png', size: 10, image: true, url: 'https://f.example/a' },
      { id: 'b'.repeat(32), name: 'notes <!here>.txt', contentType: 'text/plain', size: 1, image: false },
    ], refusedFiles: [{ name: '<!channel>.exe', reason: 'not allowed' }] })).toBe('see\n[image: a&lt;b&gt;.png https://f.example/a]\n[file: notes &lt;!here&gt;.txt]\n[a file was not relayed: &lt;!channel&gt;.exe: not allowed]');
    // Quoted above when Slack has no thread for the answered message here; a thread reply needs none.
    expect(post({ text: 'yes', quote: { name: 'alice', text: `<!here> ${'x'.repeat(100)}\nsecond line` } }))
      .toBe(`> alice: &lt;!here&gt; ${'x'.repeat(72)}…\nyes`);
    expect(post({ text: 'yes', replyTo: '1.000001', quote: { name: 'alice', text: 'q' } })).toBe('yes');
    for (const text of [post({ kind: 'action', text: '@channel' }), post({ kind: 'action', text: '<!everyone>' }), post({ quote: { name: '@here', text: '@channel' } })]) {
      expect(mentionsIn(text)).toEqual([]);
    }
  });

  test('for the chat: the template once, names without brackets', () => {
    expect(renderForChat('<{name}> {text}', 'alice', 'says {name} and {text}', '#general')).toBe('<alice> says {name} and {text}');
    expect(renderForChat('[{channel}] {name}: {text}', '{text}', 'hi', '#general')).toBe('[#general] {text}: hi');
    expect(chatName('Mallory> <!channel\nx')).toBe('Mallory !channel x');
    expect(chatName('<>')).toBe('unknown');
    expect(slackTime('1700000000.000100')).toBe('2023-11-14T22:13:20.000Z');
    expect(slackTime('nonsense')).toBeUndefined();
  });
});

describe('planFor: a gateway line as an item of the queue to Slack', () => {
  const display = relaySlackOptions.parse(base).display;

  test('a message: a post (in the thread of replyTo), keyed by channel and line', () => {
    expect(planFor('#random', line({ replyTo: '1.000001' }), display, 5)).toEqual({
      item: { key: '#random k1', line: 'k1', channel: '#random', chat: 'general', queuedAt: 5, op: 'post', text: 'hi', username: 'Bob Member', thread_ts: '1.000001' },
    });
    const twice = ['C0GENERAL1', '#random'].map((channel) => planFor(channel, line(), display, 5));
    expect(twice.map((plan) => 'item' in plan && plan.item.key)).toEqual(['C0GENERAL1 k1', '#random k1']);
  });

  test('an edit: chat.update of the relay\'s own post, else a follow-up line', () => {
    expect(planFor('C0GENERAL1', line({ kind: 'edit', text: 'fixed <b>', target: '1.000002' }), { ...display, name_in_text: true }, 5))
      .toMatchObject({ item: { op: 'update', ts: '1.000002', text: '*Bob Member*: fixed &lt;b&gt;' } });
    expect(renderEdit(line({ kind: 'edit', text: 'fixed' }), display)).toBe('fixed');
    expect(planFor('C0GENERAL1', line({ kind: 'edit', text: 'fixed' }), display, 5))
      .toMatchObject({ item: { op: 'post', text: '(edit) fixed', username: 'Bob Member' } });
  });

  test('a deletion: chat.delete of the relay\'s own post, else dropped', () => {
    expect(planFor('C0GENERAL1', line({ kind: 'delete', text: '', target: '1.000002' }), display, 5))
      .toEqual({ item: { key: 'C0GENERAL1 k1', line: 'k1', channel: 'C0GENERAL1', chat: 'general', queuedAt: 5, op: 'delete', ts: '1.000002', text: '' } });
    expect(planFor('C0GENERAL1', line({ kind: 'delete', text: '' }), display, 5)).toEqual({ dropped: 'a deletion of a message the relay did not post in this channel' });
  });

  test('joins, leaves and topics: dropped (a Slack channel shows its own)', () => {
    for (const kind of ['join', 'leave', 'topic'] as const) expect(planFor('C0GENERAL1', line({ kind }), display, 5)).toEqual({ dropped: `a ${kind} (Slack shows its own)` });
  });
});

describe('intake', () => {
  const channels = new ChannelMap(['C0GENERAL1']);
  const self = { userId: 'U0SELF0001', botId: 'B0SELF0001' };
  const envelope = (event: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ({ type: 'events_api', body: { type: 'event_callback', event_id: 'Ev1', api_app_id: 'A1', event: { type: 'message', channel: 'C0GENERAL1', user: 'U1', text: 'hi', ts: '1.1', ...event }, ...extra } });
  const changed = (now: Record<string, unknown>, before: Record<string, unknown> = { type: 'message', user: 'U1', text: 'hi', ts: '1.1' }) =>
    envelope({ subtype: 'message_changed', hidden: true, user: undefined, text: undefined, ts: '2.2', message: { type: 'message', user: 'U1', text: 'hi there', ts: '1.1', edited: { user: 'U1', ts: '2.0' }, ...now }, previous_message: before });
  const deleted = (before: Record<string, unknown>) =>
    envelope({ subtype: 'message_deleted', hidden: true, user: undefined, text: undefined, ts: '3.3', deleted_ts: '1.1', previous_message: { type: 'message', text: 'hi', ts: '1.1', ...before } });

  test('a new message by a person is taken, with its dedupe keys', () => {
    expect(admit(envelope({}), self, channels)).toEqual({ item: { kind: 'message', channel: 'C0GENERAL1', user: 'U1', text: 'hi', ts: '1.1' }, keys: ['m:C0GENERAL1:1.1', 'e:Ev1'] });
  });

  test('a thread reply names its parent; a thread\'s first message and a me_message are what they are', () => {
    expect(admit(envelope({ thread_ts: '1.0' }), self, channels)).toMatchObject({ item: { kind: 'message', ts: '1.1', thread_ts: '1.0' } });
    expect(admit(envelope({ thread_ts: '1.1' }), self, channels)).toMatchObject({ item: { kind: 'message' } });
    expect((admit(envelope({ thread_ts: '1.1' }), self, channels) as { item: object }).item).not.toHaveProperty('thread_ts');
    expect(admit(envelope({ subtype: 'thread_broadcast', thread_ts: '1.0' }), self, channels)).toMatchObject({ item: { kind: 'message', thread_ts: '1.0' } });
    expect(admit(envelope({ subtype: 'me_message', text: 'waves' }), self, channels)).toMatchObject({ item: { kind: 'action', text: 'waves' } });
    // A file keeps what reading it needs (files-in.ts), nothing else of Slack's file object.
    const file = { id: 'F1', name: 'a.png', title: 'A', permalink: 'https://p', mimetype: 'image/png', size: 3, url_private_download: 'https://files.slack.com/d/a.png', preview: 'x' };
    expect(admit(envelope({ subtype: 'file_share', text: '', files: [file] }), self, channels))
      .toEqual({ item: expect.objectContaining({ kind: 'message', files: [{ id: 'F1', name: 'a.png', title: 'A', mimetype: 'image/png', size: 3, url_private_download: 'https://files.slack.com/d/a.png' }] }), keys: expect.any(Array) });
  });

  test('an edit by a person: the edited message\'s ts, the new text, the edit\'s ts as its revision', () => {
    expect(admit(changed({}), self, channels)).toEqual({
      item: { kind: 'edit', channel: 'C0GENERAL1', user: 'U1', text: 'hi there', ts: '1.1', revision: '2.0' },
      keys: ['m:C0GENERAL1:1.1~edit~2.0', 'e:Ev1'],
    });
    // Without `edited`, the event's own ts tells the edits apart.
    expect(admit(changed({ edited: undefined }), self, channels)).toMatchObject({ item: { revision: '2.2' }, keys: ['m:C0GENERAL1:1.1~edit~2.2', 'e:Ev1'] });
  });

  test('a deletion by a person: the deleted message\'s ts, who had said it', () => {
    expect(admit(deleted({ user: 'U1' }), self, channels)).toEqual({
      item: { kind: 'delete', channel: 'C0GENERAL1', user: 'U1', text: '', ts: '1.1' }, keys: ['m:C0GENERAL1:1.1~delete', 'e:Ev1'],
    });
  });

  test.each([
    [changed({ text: 'hi' }), 'message_changed without a new text'],
    [changed({ bot_id: 'B0SELF0001', subtype: 'bot_message' }), 'a change of a bot_message'],
    [changed({ bot_id: 'B0SELF0001' }), 'own post'],
    [changed({ bot_id: 'B0OTHER001' }), 'a bot'],
    [changed({ user: 'U0SELF0001' }), 'own post'],
    [changed({ ts: undefined }), 'subtype message_changed without a message'],
    [deleted({ bot_id: 'B0SELF0001', subtype: 'bot_message' }), 'own post'],
    [deleted({ bot_id: 'B0OTHER001', subtype: 'bot_message' }), 'a bot'],
    [deleted({ user: 'U0SELF0001' }), 'own post'],
    [envelope({ subtype: 'message_deleted', hidden: true, deleted_ts: '1.1' }), 'subtype message_deleted without previous_message'],
  ])('edits and deletions not relayed: %#', (env, reason) => {
    expect(admit(env, self, channels)).toEqual({ ignored: reason });
  });

  test.each([
    [{ subtype: 'channel_leave' }, 'subtype channel_leave'],
    [{ subtype: 'channel_topic' }, 'subtype channel_topic'],
    [{ hidden: true }, 'subtype hidden'],
    [{ bot_id: 'B0SELF0001' }, 'own post'],
    [{ bot_id: 'B0OTHER001' }, 'a bot'],
    [{ user: 'U0SELF0001' }, 'own post'],
    [{ app_id: 'A1' }, 'own post'],
    [{ user: undefined }, 'no user'],
    [{ channel: 'C0OTHER0001' }, 'channel not mapped'],
    [{ type: 'reaction_added' }, 'event reaction_added'],
  ])('%j is ignored', (event, reason) => {
    expect(admit(envelope(event), self, channels)).toEqual({ ignored: reason });
  });

  test('other envelope types are ignored', () => {
    expect(admit({ type: 'slash_commands', body: {} }, self, channels)).toEqual({ ignored: 'envelope slash_commands' });
  });
});
