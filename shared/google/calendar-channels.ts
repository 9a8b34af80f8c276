import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { env } from '#shared/config';
import { getSyncState } from '#shared/db/mail-sync';
import { AuthenticationError } from '#shared/errors';
import { GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { syncSoon } from '#shared/jobs/sync-runs';
import { logger } from '#shared/logger';
import { clock } from '#shared/time';

/**
 * Provider A's calendar push: a Calendar v3 watch channel per calendar (events.watch), whose
 * notifications reach `POST /v3/push/google/calendar` and only bring the grant's next run forward
 * (what changed is read from the calendar's sync token: shared/google/calendar-changes.ts).
 *   - A channel's address is this deployment's PUBLIC_BASE_URL (no public URL: no channels, the runs poll).
 *   - Its ID starts with the grant's ID; its token is a random secret, kept only as a SHA-256 hash.
 *   - The runs renew a channel a day before it expires (a new channel, then the old one stopped) and
 *     stop the channels of calendars that left the list.
 * A notification is answered 401 unless its channel is one the grant's state holds now and its token
 * hashes to that channel's: a forged one, or one of a stopped or replaced channel, changes nothing.
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
const log = logger.child({ function: 'push' });

const hash = (token: string) => createHash('sha256').update(token).digest('base64url');

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
    token_hash: hash(token),
    expires_at: answer.expiration ? Math.floor(Number(answer.expiration) / 1000) : now + TTL_SECONDS,
  };
}

/** `POST /v3/push/google/calendar`: a channel's notification (its headers say which channel). */
export async function receiveCalendarPush(
  headers: Record<string, string>,
): Promise<{ received: true; grant_id?: string }> {
  const channelId = headers['x-goog-channel-id'] ?? '';
  const token = headers['x-goog-channel-token'] ?? '';
  const refused = () =>
    new AuthenticationError(
      "The notification's channel is not one of this deployment's, or its token is not the channel's",
    );
  const grantId = /^(grant_[0-9a-hjkmnp-tv-z]{26})-/.exec(channelId)?.[1];
  if (!grantId || !token) throw refused();
  const state = await getSyncState(grantId as never);
  const channel = Object.values(state?.gcal?.calendars ?? {})
    .map((c) => c.channel)
    .find((c) => c?.id === channelId);
  const given = Buffer.from(hash(token));
  if (!state || !channel || !timingSafeEqual(Buffer.from(channel.token_hash), given)) throw refused();
  // `sync` says the channel now exists: nothing changed yet.
  if (headers['x-goog-resource-state'] === 'sync') return { received: true, grant_id: grantId };
  log.info('calendar push', { grant_id: grantId, state: headers['x-goog-resource-state'] });
  await syncSoon({ application_id: state.application_id, id: grantId });
  return { received: true, grant_id: grantId };
}
