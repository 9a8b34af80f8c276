import { createHash, timingSafeEqual } from 'node:crypto';
import { getSyncState } from '#shared/db/mail-sync';
import { AuthenticationError } from '#shared/errors';
import { syncSoon } from '#shared/jobs/sync-runs';
import { logger } from '#shared/logger';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider A's Calendar channel notifications (`POST /v3/push/google/calendar`; the channels are kept by
 * shared/google/calendar-channels.ts). A notification is answered 401 unless its channel is one the
 * grant's state holds now and its token hashes to that channel's: a forged one, or one of a stopped or
 * replaced channel, changes nothing. A genuine one brings the grant's next run forward. A module of its
 * own: the push function bundles no provider client.
 */

const log = logger.child({ function: 'push' });

/** How a channel's token is kept (never the token itself). */
export const channelTokenHash = (token: string) => createHash('sha256').update(token).digest('base64url');

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
  const given = Buffer.from(channelTokenHash(token));
  if (!state || !channel || !timingSafeEqual(Buffer.from(channel.token_hash), given)) throw refused();
  // `sync` says the channel now exists: nothing changed yet.
  if (headers['x-goog-resource-state'] === 'sync') return { received: true, grant_id: grantId };
  log.info('calendar push', { grant_id: grantId, state: headers['x-goog-resource-state'] });
  countMetric(METRICS.pushArrivals, { provider: 'google' });
  await syncSoon({ application_id: state.application_id, id: grantId });
  return { received: true, grant_id: grantId };
}
