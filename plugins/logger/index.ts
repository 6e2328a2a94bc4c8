import { appendFile, mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { definePlugin, type ChatMessage } from '../../src/index.js';

/**
 * Transcript logger (minimal): every chat message, one JSON object a line, in
 * `<dir>/<group>/<chat>/<YYYY-MM-DD>.jsonl` (UTC days). It remembers the last msg_num written per
 * chat, so a replay never writes a line twice.
 */
export default definePlugin({
  name: 'logger',
  options: z.strictObject({
    dir: z.string().default('./transcripts'),
    format: z.literal('jsonl').default('jsonl'),
  }),
  create(options, env) {
    const root = resolve(env.configDir, options.dir);
    const safe = (part: string) => part.replace(/[^\w.+-]+/g, '_').slice(0, 100) || '_';
    return {
      async handle(ctx, next) {
        const message: ChatMessage = ctx.message;
        const key = `last:${ctx.chat.id}`;
        const last = ctx.store.get<number>(key) ?? 0;
        if (message.msg_num > last) {
          const dir = join(root, safe(ctx.chat.groupName), safe(ctx.chat.subject));
          await mkdir(dir, { recursive: true });
          const day = (message.created || new Date().toISOString()).slice(0, 10);
          await appendFile(join(dir, `${day}.jsonl`), `${JSON.stringify(message)}\n`);
          ctx.store.set(key, message.msg_num);
        }
        await next();
      },
    };
  },
});
