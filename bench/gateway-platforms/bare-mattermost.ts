import mattermost from '@mattermost/client';
import WebSocket from 'ws';

/**
 * The bare Mattermost client of the platforms bench: @mattermost/client's Client4, as the relay uses
 * it, one createPost per line as it comes (no queue, no noted attempt, no retry); and a websocket
 * (authentication_challenge, then `posted` events) whose people's posts go to the chat as they come.
 */
export async function connect(settings: { serverUrl: string; token: string; channel: string }): Promise<(text: string) => void> {
  const client = new mattermost.Client4();
  client.setUrl(settings.serverUrl);
  client.setToken(settings.token);
  client.includeCookies = false;
  return (text) => {
    void client.createPost({ channel_id: settings.channel, message: text, props: { override_username: 'carol' } } as Parameters<typeof client.createPost>[0])
      .catch((error: unknown) => process.stderr.write(`bare mattermost: ${String(error)}\n`));
  };
}

export async function listen(settings: { serverUrl: string; token: string; channel: string }, onLine: (line: string) => void): Promise<void> {
  const client = new mattermost.Client4();
  client.setUrl(settings.serverUrl);
  client.setToken(settings.token);
  client.includeCookies = false;
  const me = await client.getMe();
  const names = new Map<string, string>();
  const socket = new WebSocket(`${settings.serverUrl.replace(/^http/, 'ws')}/api/v4/websocket`);
  socket.on('open', () => socket.send(JSON.stringify({ action: 'authentication_challenge', seq: 1, data: { token: settings.token } })));
  socket.on('message', (raw) => {
    const event = JSON.parse(String(raw)) as { event?: string; data?: { post?: string } };
    if (event.event !== 'posted' || !event.data?.post) return;
    const post = JSON.parse(event.data.post) as { user_id: string; channel_id: string; message: string };
    if (post.channel_id !== settings.channel || post.user_id === me.id) return;
    const name = names.get(post.user_id);
    if (name) onLine(`<${name}> ${post.message}`);
    else {
      void client.getUser(post.user_id).then((user) => {
        names.set(post.user_id, user.username);
        onLine(`<${user.username}> ${post.message}`);
      });
    }
  });
  await new Promise<void>((ready) => socket.once('message', () => ready()));
}
