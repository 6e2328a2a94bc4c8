import { TEAM, type FakeChannel, type FakeUser } from './state.js';
import type { Answer, StoredMessage } from './web-api.js';

/** The shapes of the fake Web API's answers: ok, an error, a rate limit, a user, a channel. */

export function ok(fields: Record<string, unknown>): Answer {
  return { status: 200, body: { ok: true, ...fields } };
}

export function fail(error: string, extra: Record<string, string> = {}): Answer {
  return { status: 200, body: { ok: false, error, ...extra } };
}

/** chat.postMessage's `metadata` (a JSON string in a form post): `event_type` and an `event_payload` object, else null. */
export function parseMetadata(text: string): StoredMessage['metadata'] | null {
  try {
    const value = JSON.parse(text) as { event_type?: unknown; event_payload?: unknown } | null;
    if (typeof value?.event_type !== 'string' || typeof value.event_payload !== 'object' || value.event_payload === null) return null;
    return { event_type: value.event_type, event_payload: value.event_payload as Record<string, unknown> };
  } catch {
    return null;
  }
}

export function rateLimited(seconds: number): Answer {
  return { status: 429, headers: { 'retry-after': String(Math.max(1, seconds)) }, body: { ok: false, error: 'ratelimited' } };
}

export function presentUser(user: FakeUser): Record<string, unknown> {
  return {
    id: user.id, team_id: TEAM.id, name: user.name, deleted: false, real_name: user.real_name ?? user.name, is_bot: user.is_bot ?? false,
    profile: { display_name: user.display_name ?? '', real_name: user.real_name ?? user.name, image_72: `https://avatars.example/${user.id}.png` },
  };
}

export function presentChannel(channel: FakeChannel): Record<string, unknown> {
  return {
    id: channel.id, name: channel.name, is_channel: !channel.is_private, is_group: false, is_im: false, is_private: channel.is_private ?? false,
    is_archived: false, is_general: channel.name === 'general', is_member: channel.is_member ?? false, created: 1_600_000_000,
  };
}
