import type { Responder } from '../responder.js';
import type { BuiltinSpecs } from './specs.js';

/** `!help [command]` and `!ping`. */
export function addBasics(responder: Responder, specs: BuiltinSpecs): void {
  if (specs.help) {
    responder.command('help', {
      ...specs.help,
      description: 'lists the commands you may use here',
      args: [{ name: 'command', optional: true, description: 'a command to explain' }],
    }, async (call) => {
      const usable = await responder.usableBy(call.ctx);
      const wanted = typeof call.args.command === 'string' ? call.args.command.replace(responder.prefix, '').toLowerCase() : undefined;
      if (wanted) {
        const command = usable.find((c) => c.name.toLowerCase() === wanted || c.spec.aliases?.some((a) => a.toLowerCase() === wanted));
        if (!command) return `There is no command ${responder.prefix}${wanted} that you may use here.`;
        const lines = [`${responder.usage(command.name)} — ${command.spec.description ?? 'no description'}`];
        for (const arg of command.spec.args ?? []) {
          const type = arg.type === 'rest' ? 'text' : arg.type === 'int' ? 'whole number' : arg.type ?? 'word';
          const bounds = [arg.min !== undefined ? `from ${arg.min}` : '', arg.max !== undefined ? `to ${arg.max}` : ''].filter(Boolean).join(' ');
          lines.push(`  ${arg.name}: ${arg.description ?? type}${bounds ? ` (${bounds})` : ''}${arg.optional || arg.default !== undefined ? ', optional' : ''}`);
        }
        if (command.spec.aliases?.length) lines.push(`  also: ${command.spec.aliases.map((a) => `${responder.prefix}${a}`).join(', ')}`);
        return lines.join('\n');
      }
      const lines = usable.map((c) => `${responder.usage(c.name)} — ${c.spec.description ?? ''}`.replace(/ — $/, ''));
      return [`Commands you may use here:`, ...lines].join('\n');
    });
  }
  if (specs.ping) responder.command('ping', { ...specs.ping, description: 'answers pong' }, () => 'pong');
}
