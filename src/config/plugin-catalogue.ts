/**
 * The plugins that ship with groupwire: the one list `groupwire plugins` prints, the plugin loader
 * resolves `use:` names against, and its errors offer ("did you mean relay-irc?").
 */
export interface BuiltinPlugin {
  /** The name `use:` gives it. */
  name: string;
  /** One line: what it does. */
  summary: string;
  /** Its page, relative to the package (the installed package's docs/ holds it too). */
  docs: string;
}

export const PLUGIN_CATALOGUE = [
  { name: 'logger', summary: 'complete chat transcripts as JSON lines, text, HTML or Markdown, exactly once', docs: 'docs/plugins/logger.md' },
  { name: 'responder', summary: 'commands, keywords and patterns with templates; !help, !ping, !topics, !search, moderation', docs: 'docs/plugins/responder.md' },
  { name: 'relay-slack', summary: 'relays both ways between chats and Slack channels', docs: 'docs/plugins/relay-slack.md' },
  { name: 'relay-irc', summary: 'relays both ways between chats and IRC channels', docs: 'docs/plugins/relay-irc.md' },
  { name: 'relay-discord', summary: 'relays both ways between chats and Discord channels', docs: 'docs/plugins/relay-discord.md' },
  { name: 'relay-matrix', summary: 'relays both ways between chats and Matrix rooms', docs: 'docs/plugins/relay-matrix.md' },
  { name: 'relay-telegram', summary: 'relays both ways between chats and Telegram groups, forum topics and channels', docs: 'docs/plugins/relay-telegram.md' },
  { name: 'relay-mattermost', summary: 'relays both ways between chats and Mattermost channels', docs: 'docs/plugins/relay-mattermost.md' },
  { name: 'relay-zulip', summary: 'relays both ways between chats and Zulip stream topics (or whole streams, topics as threads)', docs: 'docs/plugins/relay-zulip.md' },
  { name: 'relay-rocketchat', summary: 'relays both ways between chats and Rocket.Chat channels and private groups', docs: 'docs/plugins/relay-rocketchat.md' },
  { name: 'relay-xmpp', summary: 'relays both ways between chats and XMPP multi-user chat rooms', docs: 'docs/plugins/relay-xmpp.md' },
  { name: 'http-api', summary: 'a gateway endpoint over HTTP: messages in by POST, out by signed webhooks and an event stream', docs: 'docs/plugins/http-api.md' },
  { name: 'group-mail', summary: 'the group\'s mail side as a gateway endpoint: new topics and messages to chats and platforms, posts into the group from them', docs: 'docs/plugins/group-mail.md' },
] as const satisfies readonly BuiltinPlugin[];

export type BuiltinPluginName = (typeof PLUGIN_CATALOGUE)[number]['name'];

export const BUILTIN_PLUGIN_NAMES: readonly BuiltinPluginName[] = PLUGIN_CATALOGUE.map((plugin) => plugin.name);

export function isBuiltinPlugin(name: string): name is BuiltinPluginName {
  return (BUILTIN_PLUGIN_NAMES as readonly string[]).includes(name);
}
