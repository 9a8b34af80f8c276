import type { ImapFlow } from 'imapflow';
import { providerTokensContext } from '#shared/connect/grants';
import { unsealJson } from '#shared/crypto/sealed';
import type { GrantRecord } from '#shared/db/grants';
import { getProviderTokens } from '#shared/db/oauth';
import { openImap, type ImapAuth } from '#shared/imap/connect';
import { accountOfGrant, type ImapPasswords } from '#shared/imap/settings';

/**
 * A grant's IMAP session: its servers from the grant's settings, its password unsealed from the
 * grant's provider-tokens item for the length of one connection (never logged, never kept).
 */

/** The grant's credentials could not be read: the grant cannot reach its server until it is connected again. */
export class MissingCredentialsError extends Error {
  constructor(grantId: string) {
    super(`Grant ${grantId} has no stored credentials for its mail server`);
    this.name = 'MissingCredentialsError';
  }
}

export async function passwordsOf(grant: GrantRecord): Promise<ImapPasswords> {
  const record = await getProviderTokens(grant.id, true);
  if (!record || record.source !== 'password') throw new MissingCredentialsError(grant.id);
  return unsealJson<ImapPasswords>(record.sealed, 'provider-tokens', providerTokensContext(grant.id));
}

async function imapAuthOf(grant: GrantRecord): Promise<ImapAuth> {
  return { pass: (await passwordsOf(grant)).imap_password };
}

/** A logged-in IMAP client for the grant (QRESYNC enabled when the server has it); the caller logs out. */
export async function openGrantImap(grant: GrantRecord): Promise<ImapFlow> {
  return openImap(accountOfGrant(grant).imap, await imapAuthOf(grant), { qresync: true });
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
