import type { ImapFlow } from 'imapflow';
import { providerTokensContext } from '#shared/connect/grants';
import { unsealJson } from '#shared/crypto/sealed';
import type { GrantRecord } from '#shared/db/grants';
import { getProviderTokens } from '#shared/db/oauth';
import { openImap, type ImapAuth, type SmtpAuth } from '#shared/imap/connect';
import { connectorForAuth } from '#shared/connectors/service';
import { providerAccessToken } from '#shared/connect/provider-tokens';
import { accountOfGrant, providerAccountOf, type ImapAccount, type ImapPasswords } from '#shared/imap/settings';

/**
 * A grant's IMAP session: its servers, and its password (unsealed from the grant's provider-tokens
 * item) or access token, for the length of one connection (never logged, never kept).
 */

/**
 * The grant's mail servers and how it logs in to each: an IMAP grant (or a preset's) with its
 * passwords; a grant of an OAuth provider with its access token (SASL XOAUTH2), refreshed first when due (shared/connect/
 * provider-tokens.ts: a refresh the provider refuses for good makes the grant invalid with grant.expired).
 */
export async function mailAccessOf(grant: GrantRecord): Promise<{ account: ImapAccount; imap: ImapAuth; smtp: SmtpAuth }> {
  const record = await getProviderTokens(grant.id, true);
  if (record?.source === 'password') {
    // An IMAP account, or a preset's (icloud, yahoo with an app password): the servers its settings keep.
    const passwords = await unsealJson<ImapPasswords>(record.sealed, 'provider-tokens', providerTokensContext(grant.id));
    return { account: accountOfGrant(grant), imap: { pass: passwords.imap_password }, smtp: { pass: passwords.smtp_password } };
  }
  const connector = await connectorForAuth(grant.application_id, grant.provider);
  const accessToken = await providerAccessToken(grant);
  return { account: providerAccountOf(grant, connector?.mail), imap: { accessToken }, smtp: { accessToken } };
}

/** A logged-in IMAP client for the grant (QRESYNC enabled when the server has it); the caller logs out. */
export async function openGrantImap(grant: GrantRecord): Promise<ImapFlow> {
  const access = await mailAccessOf(grant);
  return openImap(access.account.imap, access.imap, { qresync: true });
}

/** Runs `work` on a fresh connection of the grant, and logs out (or drops the connection) afterwards. */
export async function withImap<T>(grant: GrantRecord, work: (client: ImapFlow) => Promise<T>): Promise<T> {
  const client = await openGrantImap(grant);
  try {
    return await work(client);
  } finally {
    await client.logout().catch(() => client.close());
  }
}
