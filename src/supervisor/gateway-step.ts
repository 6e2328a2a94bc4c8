import type { Logger } from 'pino';
import type { BaseContext, ChainLink, SignalSource } from '../pipeline/chain.js';
import { LinkContext } from '../pipeline/link-context.js';
import type { GatewayRouter } from '../gateway/gateway-router.js';
import type { PluginContext } from '../pipeline/plugin.js';
import { KeyValueStore } from '../store/kv-store.js';
import { chatSideKey, type SideTraffic } from './side-traffic.js';

/** The gateway step keeps nothing of its own. */
const NO_STORE = KeyValueStore.memory();

/** Marks the gateway step among a chain's links (a plugin instance may be named `gateway` too). */
const GATEWAY_STEP = Symbol('gateway step');

export const isGatewayStep = (link: ChainLink): boolean => (link as { [GATEWAY_STEP]?: boolean })[GATEWAY_STEP] === true;

/**
 * The chain's last step when the bot takes part in gateways: each message that got this far (no plugin
 * before it ended the chain: a filter keeps a message from every side) goes on to the gateway's other sides.
 */
export function gatewayStep(gateways: GatewayRouter, bot: string, log: Logger, linesIn?: SideTraffic): ChainLink {
  const instance = {
    handle(ctx: PluginContext, next: () => Promise<void>) {
      // A line said in this chat (a member's, or the bot's own voice) enters the gateways here; a relayed one came in elsewhere.
      if (linesIn && !ctx.own?.relayed && ctx.message.type === 'chat_msg_type_normal') linesIn.note(chatSideKey(ctx.chat.id));
      gateways.forward(bot, ctx);
      return next();
    },
    stats: () => ({ ...gateways.counters }),
  };
  const link = { name: 'gateway', instance, timeoutMs: 5_000, log, ownPosts: true, context: (base: BaseContext, signal: SignalSource) => new LinkContext(base, log, NO_STORE, signal) };
  return Object.assign(link, { [GATEWAY_STEP]: true });
}
