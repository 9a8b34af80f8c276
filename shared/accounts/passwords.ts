import { providerTokensContext } from '#shared/accounts/connected';
import { unsealJson } from '#shared/crypto/sealed';
import type { GrantRecord } from '#shared/db/grants';
import { getProviderTokens } from '#shared/db/oauth';
import { accountOfGrant, type ImapAccount, type ImapPasswords } from '#shared/accounts/settings';

/**
 * The servers and passwords of a grant that logs in with a password (an IMAP account, or a preset's
 * with an app password), unsealed from its provider-tokens item for one use (never logged, never
 * kept); undefined for a grant that logs in with an access token. Apart from the OAuth path so that
 * what needs only passwords (the CalDAV and CardDAV clients) bundles none of it.
 */
export async function passwordLoginOf(
  grant: GrantRecord,
): Promise<{ account: ImapAccount; passwords: ImapPasswords } | undefined> {
  const record = await getProviderTokens(grant.id, true);
  if (record?.source !== 'password') return undefined;
  const passwords = await unsealJson<ImapPasswords>(record.sealed, 'provider-tokens', providerTokensContext(grant.id));
  return { account: accountOfGrant(grant), passwords };
}
