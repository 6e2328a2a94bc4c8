import type { StatusSnapshot } from './status-snapshot.js';

/** What /readyz answers: ready or not, and each bot or chat that is not, with why. */
export interface Readiness {
  ready: boolean;
  notReady: Array<{ bot: string; chat?: string; group?: string; state: string; reason: string }>;
  /** Relays not connected to their platform: shown, not counted against readiness (their lines wait in queues). */
  relaysDown: Array<{ bot: string; instance: string; state: string; detail?: string }>;
}

export function readiness(snapshot: StatusSnapshot): Readiness {
  const notReady: Readiness['notReady'] = [];
  const relaysDown: Readiness['relaysDown'] = [];
  for (const bot of snapshot.bots) {
    if (bot.phase !== 'running') notReady.push({ bot: bot.name, state: bot.phase, reason: bot.reason ?? bot.phase });
    for (const chat of bot.chats) {
      if (!chat.ready) notReady.push({ bot: bot.name, chat: chat.subject, group: chat.group, state: chat.state, reason: chat.reason ?? chat.state });
    }
    for (const plugin of bot.plugins) {
      const connection = plugin.connection;
      if (connection && connection.state !== 'connected') relaysDown.push({ bot: bot.name, instance: plugin.instance, ...connection });
    }
  }
  if (snapshot.bots.length === 0) notReady.push({ bot: '', state: 'none', reason: 'no bot is running' });
  return { ready: notReady.length === 0, notReady, relaysDown };
}
