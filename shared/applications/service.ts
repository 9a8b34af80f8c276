import { ApiKeyExistsError } from '#shared/db/applications';
import { getApiKeyByHash, putApplicationWithApiKey } from '#shared/db/api-keys';
import { newId, type ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';
import { FIRST_KEY_NAME, generateApiKey, hashApiKey, keyPrefixOf } from '#shared/applications/api-keys';
import { ACCESS_PREFIX, REFRESH_PREFIX } from '#shared/accounts/issued-tokens';

export interface CreatedApplication {
  application_id: ApplicationId;
  /** Shown once; only its hash is stored. */
  api_key: string;
}

/**
 * Creates an application and its first API key (listed by the application's API keys endpoints as
 * FIRST_KEY_NAME). With `apiKey` given (local development seeding), an application that already owns
 * that key is returned instead of failing.
 */
export async function createApplication(input: {
  name: string;
  apiKey?: string;
}): Promise<CreatedApplication & { created: boolean }> {
  const apiKey = input.apiKey ?? generateApiKey();
  // Bearer tokens with these prefixes are access and refresh tokens, never API keys (shared/accounts/issued-tokens.ts).
  if ([ACCESS_PREFIX, REFRESH_PREFIX].some((prefix) => apiKey.startsWith(prefix)))
    throw new Error(`An API key may not start with '${ACCESS_PREFIX}' or '${REFRESH_PREFIX}'`);
  const hash = hashApiKey(apiKey);
  const id = newId('application');
  const now = clock.nowSeconds();
  try {
    await putApplicationWithApiKey(
      { id, name: input.name, created_at: now },
      {
        id: newId('apiKey'),
        application_id: id,
        name: FIRST_KEY_NAME,
        key_prefix: keyPrefixOf(apiKey),
        key_hash: hash,
        created_at: now,
        updated_at: now,
      },
    );
    return { application_id: id, api_key: apiKey, created: true };
  } catch (error) {
    if (!(error instanceof ApiKeyExistsError) || input.apiKey === undefined) throw error;
    const existing = await getApiKeyByHash(hash);
    if (!existing) throw error;
    return { application_id: existing.application_id, api_key: apiKey, created: false };
  }
}
