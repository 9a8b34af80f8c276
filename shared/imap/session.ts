import type { ImapFlow } from 'imapflow';
import type { GrantRecord } from '#shared/db/grants';
import { mailAccessOf } from '#shared/imap/access';
import { openImap } from '#shared/imap/connect';

/**
 * A grant's IMAP session: its servers, and its password (unsealed from the grant's provider-tokens
 * item) or access token, for the length of one connection (never logged, never kept).
 */

export { mailAccessOf };

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
