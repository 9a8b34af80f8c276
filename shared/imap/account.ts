import type { ApplicationContext } from '#shared/applications/authenticate';
import type { CreateCustomGrantBody } from '#schemas/grants';
import { connectGrant } from '#shared/connect/grants';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import { verifyImap, verifySmtp } from '#shared/imap/connect';
import { grantSettingsOf, imapAccountOf } from '#shared/imap/settings';
import { IMAP_PROVIDER } from '#shared/providers/names';
import { newId } from '#shared/ids';

/**
 * IMAP grants (`POST /v3/connect/custom` with `provider: "imap"`): the account's servers and
 * credentials are checked before a grant exists (an IMAP login and an SMTP EHLO + AUTH, side by
 * side); a refusal is a 400 naming what failed, and nothing is stored. The passwords are sealed
 * beside the grant (its provider-tokens item, `source: password`: shared/connect/grants.ts) and
 * never answered; the grant's settings keep the servers and usernames. Connecting the same address
 * again re-authenticates its grant (same ID, `grant.updated`).
 */
export async function customImapGrant(app: ApplicationContext, body: CreateCustomGrantBody, meta: { ip: string; userAgent: string }): Promise<GrantRecord> {
  if (body.workspace_id !== undefined) throw new InvalidRequestError("'workspace_id' applies to Agent Accounts only");
  const { account, passwords } = imapAccountOf(body);
  const [imap, smtp] = await Promise.allSettled([verifyImap(account.imap, { pass: passwords.imap_password }), verifySmtp(account.smtp, passwords.smtp_password)]);
  const refused = [imap, smtp].flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (refused.length) {
    const other = refused.find((e) => !(e instanceof InvalidRequestError));
    if (other) throw other;
    throw new InvalidRequestError(`The account could not be connected: ${refused.map((e) => (e as Error).message).join('; ')}`);
  }
  const { grant } = await connectGrant({
    applicationId: app.applicationId,
    provider: IMAP_PROVIDER,
    email: account.email,
    ...(body.name !== undefined ? { name: body.name } : {}),
    providerUserId: account.imap.username,
    scope: ['email'],
    settings: grantSettingsOf(account),
    tokens: { source: 'password', passwords },
    // Its mail is synced from the server: the first run starts once the grant is committed (shared/services/mail-sync.ts).
    jobs: (grant) => [{ job: { kind: 'start-mail-sync', application_id: grant.application_id, grant_id: grant.id }, id: newId('job'), applicationId: grant.application_id }],
    ip: meta.ip,
    userAgent: meta.userAgent,
  });
  return grant;
}
