import { request } from 'undici';
import WebSocket from 'ws';

type Settings = { serverUrl: string; userId: string; token: string; room: string };

/**
 * The bare Rocket.Chat client of the platforms bench, on the packages the relay uses (undici, ws): one
 * chat.sendMessage per line as it comes (no queue, no _id of its own, no retry); and a DDP session
 * (connect, login by resume token, `stream-room-messages` of the room) whose people's messages go to
 * the chat as they come.
 */
export async function connect(settings: Settings): Promise<(text: string) => void> {
  const headers = { 'content-type': 'application/json', 'x-user-id': settings.userId, 'x-auth-token': settings.token };
  return (text) => {
    void request(`${settings.serverUrl}/api/v1/chat.sendMessage`, { method: 'POST', headers, body: JSON.stringify({ message: { rid: settings.room, msg: text, alias: 'carol' } }) })
      .then((answer) => answer.body.dump())
      .catch((error: unknown) => process.stderr.write(`bare rocketchat: ${String(error)}\n`));
  };
}

export async function listen(settings: Settings, onLine: (line: string) => void): Promise<void> {
  const socket = new WebSocket(`${settings.serverUrl.replace(/^http/, 'ws')}/websocket`);
  const send = (frame: unknown) => socket.send(JSON.stringify(frame));
  socket.on('open', () => send({ msg: 'connect', version: '1', support: ['1'] }));
  await new Promise<void>((ready) => {
    socket.on('message', (raw) => {
      const frame = JSON.parse(String(raw)) as { msg?: string; id?: string; collection?: string; fields?: { args?: Array<{ u: { _id: string; username: string }; msg: string; t?: string }> } };
      if (frame.msg === 'connected') send({ msg: 'method', method: 'login', id: 'login', params: [{ resume: settings.token }] });
      else if (frame.msg === 'result' && frame.id === 'login') send({ msg: 'sub', id: 'room', name: 'stream-room-messages', params: [settings.room, false] });
      else if (frame.msg === 'ready') ready();
      else if (frame.msg === 'ping') send({ msg: 'pong' });
      else if (frame.msg === 'changed' && frame.collection === 'stream-room-messages') {
        const message = frame.fields?.args?.[0];
        if (message && message.u._id !== settings.userId && !message.t) onLine(`<${message.u.username}> ${message.msg}`);
      }
    });
  });
}
