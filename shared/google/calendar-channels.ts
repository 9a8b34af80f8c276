import { randomBytes, randomUUID } from 'node:crypto';
import { env } from '#shared/config';
import { GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { channelTokenHash } from '#shared/google/calendar-push';
import { clock } from '#shared/time';

/**
 * Provider A's calendar push: a Calendar v3 watch channel per calendar (events.watch), whose
 * notifications reach `POST /v3/push/google/calendar` and only bring the grant's next run forward
 * (what changed is read from the calendar's sync token: shared/google/calendar-changes.ts).
 *   - A channel's address is this deployment's PUBLIC_BASE_URL (no public URL: no channels, the runs poll).
 *   - Its ID starts with the grant's ID; its token is a random secret, kept only as a SHA-256 hash.
 *   - The runs renew a channel a day before it expires (a new channel, then the old one stopped) and
 *     stop the channels of calendars that left the list.
 * Their notifications are received by shared/google/calendar-push.ts.
 */

export interface ChannelCheckpoint {
  id: string;
  resource_id: string;
  token_hash: string;
  /** Unix seconds. */
  expires_at: number;
}

const RENEW_BEFORE_SECONDS = 86_400;
const TTL_SECONDS = 7 * 86_400;
const PUSH_PATH = '/v3/push/google/calendar';

/** Where channels push to, or undefined when this deployment has no public URL. */
export function channelAddress(): string | undefined {
  const base = env.publicBaseUrl();
  return base ? `${base.replace(/\/+$/, '')}${PUSH_PATH}` : undefined;
}

export async function stopChannel(client: GoogleClient, channel: ChannelCheckpoint): Promise<void> {
  try {
    await client.call({
      api: 'calendar',
      method: 'POST',
      path: '/calendar/v3/channels/stop',
      body: { id: channel.id, resourceId: channel.resource_id },
    });
  } catch (error) {
    // Stopped or expired already: nothing to stop.
    if (!(error instanceof GoogleNotFoundError)) throw error;
  }
}

/**
 * The calendar's channel as it should be now: kept, renewed (a day before it expires), created, or
 * stopped when there is no address any more. Answers the channel to keep in the state (or none).
 */
export async function keepChannel(
  client: GoogleClient,
  grantId: string,
  calendarId: string,
  current: ChannelCheckpoint | undefined,
): Promise<ChannelCheckpoint | undefined> {
  const address = channelAddress();
  const now = clock.nowSeconds();
  if (!address) {
    if (current) await stopChannel(client, current);
    return undefined;
  }
  if (current && current.expires_at - now > RENEW_BEFORE_SECONDS) return current;
  const token = randomBytes(32).toString('base64url');
  const answer = await client.call<{ id: string; resourceId: string; expiration?: string }>({
    api: 'calendar',
    method: 'POST',
    path: `/calendar/v3/calendars/${encodeURIComponent(calendarId)}/events/watch`,
    body: {
      id: `${grantId}-${randomUUID()}`,
      type: 'web_hook',
      address,
      token,
      params: { ttl: String(TTL_SECONDS) },
    },
  });
  if (current) await stopChannel(client, current);
  return {
    id: answer.id,
    resource_id: answer.resourceId,
    token_hash: channelTokenHash(token),
    expires_at: answer.expiration ? Math.floor(Number(answer.expiration) / 1000) : now + TTL_SECONDS,
  };
}
