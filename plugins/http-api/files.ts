import { createHash } from 'node:crypto';

/**
 * A channel's name as part of a file name under the plugin's state: as it is when it is safe (the
 * options allow only such names), else a hash (a channel that only bots.yaml's `gateways:` names).
 */
export function fileNameOf(name: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name) ? name : `h-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}
