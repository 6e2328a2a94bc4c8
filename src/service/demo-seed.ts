import type { Seed } from './seed.js';

/** Passwords of the demo accounts; the README lists them, so they are no secret. */
export const DEMO_ACCOUNTS = {
  alice: { email: 'alice@example.com', password: 'alice-demo', role: 'owner' },
  mo: { email: 'mo@example.com', password: 'mo-demo', role: 'moderator' },
  bob: { email: 'bob@example.com', password: 'bob-demo', role: 'member' },
  carol: { email: 'carol@example.com', password: 'carol-demo', role: 'member' },
  bot: { email: 'bot@example.com', password: 'bot-demo', role: 'member with manage_chats and view_activity' },
  dave: { email: 'dave@example.com', password: 'dave-demo', role: 'banned' },
} as const;

/** The built-in seed `groupwire serve` uses when no `--seed` is given. */
export const DEMO_SEED: Seed = {
  users: [
    { email: 'alice@example.com', password: 'alice-demo', full_name: 'Alice Owner', user_name: 'alice', timezone: 'Europe/Berlin' },
    { email: 'mo@example.com', password: 'mo-demo', full_name: 'Mo Moderator', user_name: 'mo', timezone: 'America/New_York' },
    { email: 'bob@example.com', password: 'bob-demo', full_name: 'Bob Member', user_name: 'bob' },
    { email: 'carol@example.com', password: 'carol-demo', full_name: 'Carol Member', user_name: 'carol', timezone: 'Asia/Tokyo' },
    { email: 'bot@example.com', password: 'bot-demo', full_name: 'Demo Bot', user_name: 'bot' },
    { email: 'dave@example.com', password: 'dave-demo', full_name: 'Dave Banned', user_name: 'dave' },
  ],
  groups: [
    {
      name: 'demo',
      title: 'Demo Group',
      desc: '<p>A sandbox group for trying groupwire bots.</p>',
      subject_tag: 'demo',
      settings: {
        privacy: 'group_privacy_archives',
        chat_access: 'group_access_members',
        allow_downloads: 'allow_downloads_by_members',
      },
      members: [
        { email: 'alice@example.com', role: 'owner' },
        { email: 'mo@example.com', role: 'moderator' },
        { email: 'bob@example.com', role: 'member', signature: 'Bob\nSent from my terminal' },
        { email: 'carol@example.com', role: 'member' },
        // A bot that makes its own chats (and so may moderate them) and answers !activity to moderators.
        { email: 'bot@example.com', role: 'member', grants: ['manage_chats', 'view_activity'] },
        { email: 'dave@example.com', role: 'banned' },
      ],
      hashtags: [
        { name: 'announce', description: 'Announcements from the owners' },
        { name: 'help', description: 'Questions and answers' },
        { name: 'bots', description: 'Everything about bots' },
      ],
      topics: [
        {
          subject: 'Welcome to the demo group #announce',
          sticky: true,
          messages: [
            { from: 'alice@example.com', ago: '30d', body: 'Welcome! This group is a sandbox for groupwire.\nFrom here you can try bots safely.' },
            { from: 'bob@example.com', ago: '29d', body: 'Thanks Alice!\n\n-- \nBob\nSent from my terminal' },
          ],
        },
        {
          subject: 'How do I write a bot? #help #bots',
          messages: [
            { from: 'carol@example.com', ago: '10d', body: 'Is there a guide for writing a responder bot?' },
            {
              from: 'mo@example.com', ago: '9d', body: 'See the attached notes.\n>From the docs: plugins are middleware.',
              attachments: [{ filename: 'bot-notes.txt', media_type: 'text/plain', content: 'A plugin is (ctx, next) => ...\n' }],
            },
            { from: 'bot@example.com', ago: '9d', body: 'I am a bot and I approve this message.' },
          ],
        },
        {
          subject: 'Meeting notes',
          messages: [
            {
              from: 'mo@example.com', ago: '3d', html: true,
              body: '<p>Notes from the <b>weekly</b> meeting.</p><p>From now on we meet on Mondays.</p>',
              attachments: [{ filename: 'agenda.png', media_type: 'image/png', content_base64: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==' }],
            },
          ],
        },
        {
          subject: 'Release planning #announce',
          messages: [
            { from: 'alice@example.com', ago: '1d', body: 'The next release ships the IRC relay.' },
            { from: 'carol@example.com', ago: '2h', body: 'Looking forward to the relay!' },
          ],
        },
      ],
      chats: [
        {
          subject: 'general',
          desc: '<p>Anything goes</p>',
          owner: 'mo@example.com',
          members: ['alice@example.com', 'bob@example.com', 'carol@example.com'],
          history: [
            { from: 'mo@example.com', message: 'Welcome to #general!' },
            { from: 'bob@example.com', message: 'Hi all' },
            { from: 'carol@example.com', message: 'Hello from Tokyo' },
          ],
        },
        {
          subject: 'random',
          desc: '<p>Off-topic chatter</p>',
          owner: 'alice@example.com',
          members: ['carol@example.com'],
          history: [{ from: 'alice@example.com', message: 'Post your cat pictures here.' }],
        },
        {
          subject: 'archive',
          desc: '<p>An old chat, closed</p>',
          owner: 'mo@example.com',
          closed: true,
          members: ['bob@example.com'],
          history: [{ from: 'mo@example.com', message: 'This chat is kept for the record.' }],
        },
      ],
    },
  ],
};
