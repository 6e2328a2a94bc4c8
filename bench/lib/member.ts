import { GroupsClient, type Chat } from '../../src/api/index.js';
import type { ServiceProcess } from './service-process.js';

/** A demo member logged in, with its chat_sub of `general` (joined when it has none). */
export async function member(service: ServiceProcess, email: string, password: string): Promise<{ client: GroupsClient; chatsubId: string; userId: string }> {
  const client = new GroupsClient({ baseUrl: service.baseUrl, ca: service.ca, credentials: { email, password } });
  const userId = String((await client.login()).id);
  let general: Chat | undefined;
  for await (const chat of client.paginate<Chat>('getchats', { group_name: 'demo', limit: 100 })) if (chat.subject === 'general') general = chat;
  if (!general) throw new Error('the demo group has no chat general');
  return { client, userId, chatsubId: String(general.chat_sub?.id ?? (await client.joinChat({ chat_id: general.id })).id) };
}
