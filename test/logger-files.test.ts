import { describe, expect, test } from 'vitest';
import type { ChatMessage } from '../src/api/index.js';
import type { Attachment, PluginContext, RefusedFile } from '../src/index.js';
import { FORMATS } from '../plugins/logger/formats.js';
import { loggedMessage, withOrigin } from '../plugins/logger/logged-message.js';

/**
 * The logger records the files of relayed lines (#34 part 5): jsonl a `files` array (and
 * `refused_files`), text and markdown a line per file, html a thumbnail for an image with a link
 * (linking to the stored file) and a link for any other file. Everything a sender chose (names) is
 * escaped; only http(s) links are made.
 */

const utc = { timeZone: 'UTC', timeFormat: 'HH:mm:ss' };

const line = (msgNum: number, text: string): ChatMessage => ({
  object: 'chat_message', id: `77${msgNum}`, created: '2026-03-01T10:00:01.000Z', version: 1, user_id: '5', group_id: '7', chat_id: '12',
  type: 'chat_msg_type_normal', message: text, msg_num: msgNum, display_name: 'Demo Bot', user_name: 'bot', profile_photo_url: '',
  profile_privacy: 'profile_members', email: 'bot@example.com',
});

const photo: Attachment = { id: 'a'.repeat(32), name: 'cat.png', contentType: 'image/png', size: 150_000, image: true, url: `https://media.example.org/${'a'.repeat(32)}/cat.png` };
const report: Attachment = { id: 'b'.repeat(32), name: 'report.pdf', contentType: 'application/pdf', size: 2_400_000, image: false, url: `https://media.example.org/${'b'.repeat(32)}/report.pdf` };
const unlinked: Attachment = { id: 'c'.repeat(32), name: 'dog.jpg', contentType: 'image/jpeg', size: 900, image: true };
const refused: RefusedFile = { name: 'big.iso', reason: 'too big (40 MB, limit 25 MB)' };

function relayedWith(message: ChatMessage, files: Attachment[], refusedFiles: RefusedFile[] = []): ChatMessage {
  const relayed = {
    gateway: 'general', endpoint: 'irc:#general@bot/relay-irc', platform: 'irc', nativeId: 'n1', kind: 'message',
    speaker: { platform: 'irc', id: 'alice!a@example.org', name: 'alice' }, text: 'look', bus: true, first: true, files, refusedFiles,
  };
  return loggedMessage({ message, own: { relayed } } as unknown as PluginContext);
}

describe('logger: files of relayed lines', () => {
  test('jsonl: files as {name, content_type, size, image, url} and refused_files; the chain\'s message is not changed; history read back gets the same', () => {
    const said = line(3, '<alice> look');
    const logged = relayedWith(said, [photo, unlinked], [refused]);
    const entry = JSON.parse(FORMATS.jsonl.entry(logged, utc)) as Record<string, unknown>;
    expect(entry.files).toEqual([
      { name: 'cat.png', content_type: 'image/png', size: 150_000, image: true, url: photo.url },
      { name: 'dog.jpg', content_type: 'image/jpeg', size: 900, image: true },
    ]);
    expect(entry.refused_files).toEqual([{ name: 'big.iso', reason: 'too big (40 MB, limit 25 MB)' }]);
    expect(entry.msg_num).toBe(3);
    expect(said).not.toHaveProperty('files');
    // A line read from the chat's history: the message map's record gives the same entry.
    const own = { relayed: { gateway: 'general', speaker: { platform: 'irc', id: 'alice!a@example.org', name: 'alice' }, files: [photo, unlinked], refusedFiles: [refused] } };
    expect(JSON.parse(FORMATS.jsonl.entry(withOrigin(said, own as never), utc))).toEqual(entry);
  });

  test('text: a line per file after the message (type, size, link), and one per refused file; controls in a name shown, not obeyed', () => {
    const hostile: Attachment = { ...report, name: 'evil\nname\u001b[2J.pdf' };
    const entry = FORMATS.text.entry(relayedWith(line(4, '<alice> look'), [photo, hostile, unlinked], [refused]), utc);
    expect(entry).toBe([
      '[10:00:01] <Demo Bot> <alice> look',
      `    [image: cat.png (image/png, 150 KB) ${photo.url}]`,
      `    [file: evil\\u{a}name\\u{1b}[2J.pdf (application/pdf, 2.4 MB) ${report.url}]`,
      '    [image: dog.jpg (image/jpeg, 900 bytes)]',
      '    [a file was not relayed: big.iso: too big (40 MB, limit 25 MB)]',
      '',
    ].join('\n'));
  });

  test('html: an image with a link is a lazy thumbnail linking to the stored file, another file a link, an image without a link only its name; names and links escaped; still one entry line', () => {
    const hostileImage: Attachment = { ...photo, name: '"><script>alert(1)</script>.png', url: 'https://media.example.org/x/%22a.png?q="><b>' };
    const scriptLink: Attachment = { ...report, name: 'click.pdf', url: 'javascript:alert(1)' };
    const entry = FORMATS.html.entry(relayedWith(line(5, '<alice> look'), [photo, report, unlinked, hostileImage, scriptLink], [refused]), utc);
    expect(entry.endsWith('</div>\n')).toBe(true);
    expect(entry.trim().includes('\n')).toBe(false);
    expect(FORMATS.html.msgNumOf!(entry.trim())).toBe(5);
    expect(entry).toContain(`<a class="thumb" href="${photo.url}" rel="nofollow noopener noreferrer"><img src="${photo.url}" alt="cat.png" loading="lazy"></a>`);
    expect(entry).toContain(`<a href="${report.url}" rel="nofollow noopener noreferrer">report.pdf</a> (application/pdf, 2.4 MB)`);
    // No link, no image: the name alone.
    expect(entry).toContain('dog.jpg (image/jpeg, 900 bytes)');
    expect(entry.match(/<img /g)).toHaveLength(2);
    expect(entry).not.toContain('<script>');
    expect(entry).not.toContain('<b>');
    expect(entry).toContain('alt="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;.png"');
    expect(entry).toContain('src="https://media.example.org/x/%22a.png?q=&quot;&gt;&lt;b&gt;"');
    // Not http(s): no link at all.
    expect(entry).not.toContain('javascript:');
    expect(entry).toContain('a file was not relayed: big.iso: too big (40 MB, limit 25 MB)');
    // Thumbnails have a size cap in the page's style.
    const header = FORMATS.html.header({ group: 'demo', chat: 'general', timeZone: 'UTC' });
    expect(header).toMatch(/\.thumb img\{[^}]*max-width:\d+px[^}]*max-height:\d+px/);
  });

  test('markdown: the files on the entry\'s one line, names escaped, links only for http(s)', () => {
    const entry = FORMATS.markdown.entry(relayedWith(line(6, '<alice> look'), [photo, { ...report, name: 'a*b*[c](d).pdf' }, unlinked], [refused]), utc);
    expect(entry).toBe(`- <a id="m6"></a>\`10:00:01\` **Demo Bot**: &lt;alice> look<br>[image: [cat.png](${photo.url}) (image/png, 150 KB)]`
      + `<br>[file: [a\\*b\\*\\[c\\](d).pdf](${report.url}) (application/pdf, 2.4 MB)]<br>[image: dog.jpg (image/jpeg, 900 bytes)]`
      + '<br>[a file was not relayed: big.iso: too big (40 MB, limit 25 MB)]\n');
    expect(FORMATS.markdown.msgNumOf!(entry.trim())).toBe(6);
  });

  test('an export from the jsonl files renders the files as the logger did (the jsonl entry keeps all the other formats need)', () => {
    const logged = relayedWith(line(7, '<alice> look'), [photo, report, unlinked], [refused]);
    const stored = JSON.parse(FORMATS.jsonl.entry(logged, utc)) as ChatMessage;
    for (const format of [FORMATS.text, FORMATS.html, FORMATS.markdown]) expect(format.entry(stored, utc)).toBe(format.entry(logged, utc));
  });
});
