import { connectGrant } from '#shared/accounts/connected';
import { ConflictError } from '#shared/errors';
import { createConnector } from '#shared/connectors/service';
import type { GrantRecord } from '#shared/db/grants';
import type { ApplicationId } from '#shared/ids';
import type { GoogleFake } from '../../scripts/local-stack/google/server';
import { makeApplication, uniqueEmail } from './factories';

/**
 * A `google` grant whose provider A APIs are the local Google fake: an application (a new one, or the
 * one given) with a google connector whose `api_base_url` is the fake, and a grant connected with an
 * access token the fake knows for a new user.
 */
export async function connectFakeGoogleGrant(
  fake: GoogleFake,
  name = 'google',
  options: { applicationId?: string; scope?: string[] } = {},
): Promise<{ grant: GrantRecord; applicationId: ApplicationId; email: string; accessToken: string }> {
  const applicationId = (options.applicationId ?? (await makeApplication(name)).applicationId) as ApplicationId;
  try {
    await createConnector({ applicationId, credential: 'api_key' }, {
      provider: 'google',
      settings: { client_id: 'client-a', client_secret: 'secret-a', api_base_url: fake.url },
    } as never);
  } catch (error) {
    // The application's google connector, made for an earlier grant of the same fake.
    if (!(options.applicationId && error instanceof ConflictError)) throw error;
  }
  const email = uniqueEmail('gmail');
  const accessToken = `token-of-${email}`;
  fake.addUser({ email, accessToken });
  const { grant } = await connectGrant({
    applicationId,
    provider: 'google',
    email,
    providerUserId: `sub-${email}`,
    scope: options.scope ?? ['https://www.googleapis.com/auth/gmail.modify'],
    settings: {},
    tokens: { source: 'oauth', access_token: accessToken, refresh_token: `refresh-${email}`, expires_in: 3600 },
  });
  return { grant, applicationId, email, accessToken };
}
