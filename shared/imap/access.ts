import type { GrantRecord } from '#shared/db/grants';
import type { ImapAuth, SmtpAuth } from '#shared/imap/connect';
import { passwordLoginOf } from '#shared/accounts/passwords';
import { connectorForAuth } from '#shared/connectors/service';
import { providerAccessToken } from '#shared/accounts/provider-tokens';
import { providerAccountOf, type ImapAccount } from '#shared/accounts/settings';

/**
 * How a grant logs in to its servers (its password, unsealed from the grant's provider-tokens item,
 * or its access token), apart from the IMAP client itself: the CalDAV and CardDAV clients log in the
 * same way without bundling an IMAP library.
 */
/**
 * The grant's mail servers and how it logs in to each: an IMAP grant (or a preset's) with its
 * passwords; a grant of an OAuth provider with its access token (SASL XOAUTH2), refreshed first when due (shared/connect/
 * provider-tokens.ts: a refresh the provider refuses for good makes the grant invalid with grant.expired).
 */
export async function mailAccessOf(
  grant: GrantRecord,
): Promise<{ account: ImapAccount; imap: ImapAuth; smtp: SmtpAuth }> {
  // An IMAP account, or a preset's (icloud, yahoo with an app password): the servers its settings keep.
  const login = await passwordLoginOf(grant);
  if (login)
    return {
      account: login.account,
      imap: { pass: login.passwords.imap_password },
      smtp: { pass: login.passwords.smtp_password },
    };
  const connector = await connectorForAuth(grant.application_id, grant.provider);
  const accessToken = await providerAccessToken(grant);
  return { account: providerAccountOf(grant, connector?.mail), imap: { accessToken }, smtp: { accessToken } };
}
