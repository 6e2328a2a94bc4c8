import { describe, expect, test } from 'vitest';
import type { Message } from '../src/api/index.js';
import { groupMailOptions } from '../plugins/group-mail/options.js';
import { isAfter } from '../plugins/group-mail/archive-follower.js';
import { fill, isReply, messageFields, oneLine, snippetOf, startOf, topicSubject } from '../plugins/group-mail/render.js';

/** group-mail's pure parts: snippets, templates, the cursor's order, its options. */

const message = (fields: Partial<Message>): Message => ({
  object: 'message', id: '1', created: '2026-11-26T10:00:00Z', updated: '2026-11-26T10:00:00Z', user_id: '7', group_id: '3', topic_id: '9',
  msg_num: 5, subject: 'Hello', body: '', quoted: '', remainder: '', snippet: '', name: 'Alice', profile_photo_url: '', is_plain_text: true,
  has_liked: false, is_closed: false, is_moderated: false, can_repost: false, num_likes: 0, reply_to: '', hashtags: [], poll_id: '0', attachments: [],
  ...fields,
});

describe('group-mail: what a message shows', () => {
  test('the snippet is the plain text without the quoted part and the signature, shortened', () => {
    const body = 'Yes, Friday works.\n\nOn Thu, 26 Nov 2026, Bob wrote:\n> Does Friday work?\n> For everyone?\n\nSee you.\n-- \nAlice\nSent from my phone';
    expect(snippetOf(message({ body }), 200)).toBe('Yes, Friday works. See you.');
    expect(snippetOf(message({ body }), 10)).toBe('Yes, Frid…');
    expect(snippetOf(message({ body }), 0)).toBe('');
    const html = '<p>Notes from the <b>weekly</b> meeting &amp; more.</p><blockquote>old <blockquote>older</blockquote> text</blockquote><p>Bye</p><p>-- </p><p>Mo</p>';
    expect(snippetOf(message({ body: html, is_plain_text: false }), 200)).toBe('Notes from the weekly meeting & more. Bye');
    // "wrote:" with no quote after it is a sentence like any other.
    expect(snippetOf(message({ body: 'She wrote:\nthe plan' }), 200)).toBe('She wrote: the plan');
  });

  test('templates: fields filled, unknown ones kept as written, one line', () => {
    const fields = messageFields(message({ subject: 'Re: Re: Picnic', hashtags: [{ name: 'announce' } as never], msg_num: 42 }), {
      group: 'demo', groupUrl: 'https://gds.example/g/demo', snippetLength: 20, link: '{group_url}/message/{msg_num}',
    });
    expect(fields).toMatchObject({ subject: 'Picnic', hashtags: '#announce', link: 'https://gds.example/g/demo/message/42', msg_num: '42', author: 'Alice' });
    expect(oneLine(fill('New: {subject}\n{hashtags} {nope}', { ...fields }))).toBe('New: Picnic #announce {nope}');
    expect(oneLine('re: x — ')).toBe('re: x');
    expect(topicSubject(message({ subject: 'RE: re:  Budget' }))).toBe('Budget');
  });

  test('a reply is known by is_reply, or in the older form by its subject', () => {
    expect(isReply(message({ is_reply: true }))).toBe(true);
    expect(isReply(message({ is_reply: false, subject: 'Re: x' }))).toBe(false);
    expect(isReply(message({ subject: 'Re: x' }))).toBe(true);
    expect(isReply(message({ subject: 'Reminder' }))).toBe(false);
  });

  test('a subject from a line: its first words, cut at a word', () => {
    expect(startOf('short line')).toBe('short line');
    expect(startOf('word '.repeat(30), 20)).toBe('word word word word…');
  });
});

describe('group-mail: the cursor', () => {
  test('by msg_num where both have one; by time and id where not, an id seen at the same instant excluded', () => {
    expect(isAfter(message({ msg_num: 6 }), { msgNum: 5, created: '2026-11-26T11:00:00Z', ids: [] })).toBe(true);
    expect(isAfter(message({ msg_num: 5 }), { msgNum: 5, created: '2026-11-26T09:00:00Z', ids: [] })).toBe(false);
    const cursor = { msgNum: 0, created: '2026-11-26T10:00:00.500-00:00', ids: ['a'] };
    expect(isAfter(message({ msg_num: 0, id: 'b', created: '2026-11-26T10:00:00.5Z' }), cursor)).toBe(true);
    expect(isAfter(message({ msg_num: 0, id: 'a', created: '2026-11-26T10:00:00.5Z' }), cursor)).toBe(false);
    // Offsets compare as instants: 03:00:01-07:00 is after 10:00:00.5Z.
    expect(isAfter(message({ msg_num: 0, id: 'c', created: '2026-11-26T03:00:01-07:00' }), cursor)).toBe(true);
  });

  test('options: durations, hashtags without #, moderation families; a poll faster than 50 ms is refused', () => {
    const options = groupMailOptions.parse({ groups: { general: 'demo' }, hashtags: ['#Announce'], poll: { min: '500ms', max: '2m' }, moderation: true });
    expect(options).toMatchObject({ hashtags: ['announce'], poll: { min: 500, max: 120_000 }, moderation: ['mod'], follow: 'topics', post_to_group: false });
    expect(groupMailOptions.safeParse({ poll: { min: '10ms', max: '1s' } }).success).toBe(false);
    expect(groupMailOptions.safeParse({ topic_template: 'no subject' }).success).toBe(false);
  });
});
