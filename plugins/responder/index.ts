import { z } from 'zod';
import { definePlugin } from '../../src/index.js';

/** Responder (minimal): `!ping` answers `pong`, `!help` lists the commands. */
export default definePlugin({
  name: 'responder',
  options: z.strictObject({
    prefix: z.string().min(1).default('!'),
  }),
  create(options) {
    const commands: Record<string, string> = { ping: 'answers pong', help: 'lists the commands' };
    return {
      async handle(ctx, next) {
        const text = ctx.message.message.trim();
        if (text.startsWith(options.prefix)) {
          const name = text.slice(options.prefix.length).split(/\s+/, 1)[0]?.toLowerCase();
          if (name === 'ping') await ctx.reply('pong');
          else if (name === 'help') {
            await ctx.reply(Object.entries(commands).map(([command, what]) => `${options.prefix}${command}: ${what}`).join('\n'));
          }
        }
        await next();
      },
    };
  },
});
