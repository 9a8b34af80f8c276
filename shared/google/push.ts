import type { PubSubPushBody } from '#schemas/push';
import * as connectors from '#shared/db/connectors';
import { getGrantByEmail } from '#shared/db/grants';
import { getSyncState } from '#shared/db/mail-sync';
import { AuthenticationError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { verifyPushToken } from '#shared/google/push-token';
import { originOf } from '#shared/http/origin';
import type { ApplicationId } from '#shared/ids';
import { logger } from '#shared/logger';
import { syncSoon } from '#shared/jobs/sync-runs';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider A's Gmail pushes (`POST /v3/push/google/pubsub?application_id=…`): Gmail publishes a mailbox's
 * change to the application's Pub/Sub topic (the connector's `topic_name`, watched by each grant's
 * runs: shared/google/mail-changes.ts), whose push subscription POSTs it here with an OIDC token.
 * The token is checked before anything is read (signed by Google's keys, issued by Google, for the
 * subscription's audience, as the service account the connector names); then the push only brings
 * the grant's next run forward. What changed is always read from the grant's cursor, so a push that
 * arrives twice, out of order, for a grant deleted since, or never, changes nothing that is announced.
 * A verified push for no grant of this application (or one not syncing) is acknowledged, so that
 * Pub/Sub does not send it again.
 */

const log = logger.child({ function: 'push' });

/** What provider A's push needs of an application's google connector (undefined: no connector, or no topic). */
export async function googlePushSettings(
  appId: ApplicationId,
): Promise<
  | { topicName: string; serviceAccount: string | undefined; audience: string | undefined; apiBase: string | undefined }
  | undefined
> {
  const settings = (await connectors.getConnector(appId, 'google'))?.settings;
  if (!settings?.topic_name) return undefined;
  return {
    topicName: settings.topic_name,
    serviceAccount: settings.pubsub_service_account,
    audience: settings.pubsub_audience,
    apiBase: settings.api_base_url,
  };
}

/** Google's ID tokens' issuers, and where its signing keys are (api_base_url replaces the scheme and host). */
const GOOGLE_ISSUERS = ['https://accounts.google.com', 'accounts.google.com'];
const GOOGLE_JWKS = 'https://www.googleapis.com/oauth2/v3/certs';
const APPLICATION_ID = /^[0-9a-z_-]{1,64}$/i;

export async function receiveGmailPush(
  applicationId: string,
  headers: Record<string, string>,
  body: PubSubPushBody,
  /** The push endpoint's path and query, as reached (Pub/Sub's default audience is the endpoint's URL). */
  target: string,
): Promise<{ received: true; grant_id?: string }> {
  if (!APPLICATION_ID.test(applicationId)) throw new NotFoundError(`No application '${applicationId}'`);
  const settings = await googlePushSettings(applicationId as ApplicationId);
  if (!settings)
    throw new NotFoundError(
      `Application '${applicationId}' has no google connector with a settings.topic_name: it receives no Gmail pushes`,
    );
  if (!settings.serviceAccount)
    throw new AuthenticationError(
      'The google connector names no settings.pubsub_service_account: pushes cannot be verified, so none is accepted',
    );
  const token = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];
  if (!token)
    throw new AuthenticationError('A push must carry its subscription\u2019s token (Authorization: Bearer <JWT>)');
  await verifyPushToken(token, {
    issuers: GOOGLE_ISSUERS,
    jwksUri: new URL('/oauth2/v3/certs', settings.apiBase ?? GOOGLE_JWKS).href,
    // Pub/Sub's default audience is the push endpoint's URL.
    audience: settings.audience ?? `${originOf(headers) ?? ''}${target}`,
    email: settings.serviceAccount,
  });
  const change = readChange(body.message.data);
  const grant = await getGrantByEmail(applicationId as ApplicationId, change.emailAddress);
  if (!grant || grant.provider !== 'google' || grant.grant_status !== 'valid' || !(await getSyncState(grant.id))) {
    log.info('push for no syncing grant', { application_id: applicationId });
    return { received: true };
  }
  countMetric(METRICS.pushArrivals, { provider: 'google' });
  await syncSoon({ application_id: grant.application_id, id: grant.id });
  return { received: true, grant_id: grant.id };
}

function readChange(data: string): { emailAddress: string; historyId: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
  } catch {
    throw new InvalidRequestError("'message.data' is not base64 of JSON");
  }
  const { emailAddress, historyId } = (parsed ?? {}) as { emailAddress?: unknown; historyId?: unknown };
  if (typeof emailAddress !== 'string' || !emailAddress.includes('@'))
    throw new InvalidRequestError("'message.data' names no emailAddress");
  return { emailAddress, historyId: String(historyId ?? '') };
}
