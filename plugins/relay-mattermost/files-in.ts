import type { IncomingFile } from '../../src/index.js';
import { FILE_ID, type MattermostRest } from './session.js';

/**
 * Files said on Mattermost: a post's `file_ids`, each read through GET /api/v4/files/{id} on the
 * configured server with the relay's token (session.ts). The post's metadata gives each file's name,
 * type and size; nothing else of it is used (an embed, an image or a link in it is never fetched), and
 * only ids the post lists in `file_ids` are read.
 */

/** What Mattermost says of a file (FileInfo), the fields the relay reads. */
export interface MattermostFileInfo {
  id: string;
  name?: string;
  mime_type?: string;
  size?: number;
}

/** A post's files as IncomingFiles, in the order of `file_ids`; an id without metadata is asked about (GET /files/{id}/info). */
export async function incomingFiles(
  post: { file_ids?: unknown; metadata?: { files?: unknown } },
  rest: () => MattermostRest,
  signal: AbortSignal,
): Promise<IncomingFile[]> {
  const ids = Array.isArray(post.file_ids) ? post.file_ids.filter((id): id is string => typeof id === 'string' && FILE_ID.test(id)) : [];
  if (ids.length === 0) return [];
  const described = new Map<string, MattermostFileInfo>();
  for (const info of Array.isArray(post.metadata?.files) ? post.metadata.files as MattermostFileInfo[] : []) {
    if (info && typeof info.id === 'string' && ids.includes(info.id)) described.set(info.id, info);
  }
  const files: IncomingFile[] = [];
  for (const id of ids) {
    let info = described.get(id);
    if (!info) {
      try {
        info = await rest().get<MattermostFileInfo>(`${rest().client.getFileRoute(id)}/info`, signal);
      } catch (error) {
        if (signal.aborted) throw error;
        // The server will say it again when the bytes are read: the file goes by its id's name for now.
        info = { id };
      }
    }
    const name = typeof info.name === 'string' && info.name.trim() !== '' ? info.name : 'file';
    files.push({
      name,
      ...(typeof info.mime_type === 'string' && info.mime_type !== '' ? { contentType: info.mime_type } : {}),
      ...(typeof info.size === 'number' && info.size >= 0 ? { size: info.size } : {}),
      open: (openSignal) => rest().download(id, openSignal),
    });
  }
  return files;
}
