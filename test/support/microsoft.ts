import { connectGrant } from '#shared/accounts/connected';
import { ConflictError } from '#shared/errors';
import { createConnector } from '#shared/connectors/service';
import type { GrantRecord } from '#shared/db/grants';
import type { ApplicationId } from '#shared/ids';
import type { GraphFake } from '../../scripts/local-stack/microsoft/server';
import { makeApplication, uniqueEmail } from './factories';

/**
 * A `microsoft` grant whose Microsoft Graph is the local Graph fake: an application (a new one, or
 * the one given) with a microsoft connector whose `api_base_url` is the fake, and a grant connected
 * with an access token the fake knows for a new user (its Graph ID as the grant's provider user).
 */
export async function connectFakeMicrosoftGrant(
  fake: GraphFake,
  name = 'microsoft',
  options: {
    applicationId?: string;
    scope?: string[];
    displayName?: string;
    /** The grant's settings (`{credential_type: 'adminconsent'}`: application permissions, `/users/{id}` paths). */
    settings?: Record<string, unknown>;
    /** The access token's lifetime in seconds (3600 by default). */
    expiresIn?: number;
  } = {},
): Promise<{ grant: GrantRecord; applicationId: ApplicationId; email: string; accessToken: string; userId: string }> {
  const applicationId = (options.applicationId ?? (await makeApplication(name)).applicationId) as ApplicationId;
  try {
    await createConnector({ applicationId, credential: 'api_key' }, {
      provider: 'microsoft',
      settings: { client_id: 'client-b', client_secret: 'secret-b', api_base_url: fake.url },
    } as never);
  } catch (error) {
    // The application's microsoft connector, made for an earlier grant of the same fake.
    if (!(options.applicationId && error instanceof ConflictError)) throw error;
  }
  const email = uniqueEmail('outlook');
  const accessToken = `token-of-${email}`;
  const { id: userId } = fake.addUser({
    email,
    accessToken,
    ...(options.displayName !== undefined ? { displayName: options.displayName } : {}),
  });
  const { grant } = await connectGrant({
    applicationId,
    provider: 'microsoft',
    email,
    providerUserId: userId,
    scope: options.scope ?? ['Mail.ReadWrite', 'Mail.Send', 'offline_access'],
    settings: options.settings ?? {},
    tokens: {
      source: 'oauth',
      access_token: accessToken,
      refresh_token: `refresh-${email}`,
      expires_in: options.expiresIn ?? 3600,
    },
  });
  return { grant, applicationId, email, accessToken, userId };
}
