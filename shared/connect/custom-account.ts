import type { ApplicationContext } from '#shared/caller';
import type { CreateCustomGrantBody } from '#schemas/grants';
import { connectGrant } from '#shared/accounts/connected';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import { verifyImap, verifySmtp } from '#shared/imap/connect';
import { checkDavUrl, discoverHomes, type DavSettings } from '#shared/dav/session';
import {
  grantSettingsOf,
  imapAccountOf,
  presetDavServers,
  providerAccountOf,
  type ImapAccount,
  type ImapPasswords,
} from '#shared/accounts/settings';
import { connectorForAuth } from '#shared/connectors/service';
import { IMAP_PROVIDER } from '#shared/providers/names';

/**
 * IMAP grants (`POST /v3/connect/custom` with `provider: "imap"`): the account's servers and
 * credentials are checked before a grant exists (an IMAP login and an SMTP EHLO + AUTH, side by
 * side); a refusal is a 400 naming what failed, and nothing is stored. The passwords are sealed
 * beside the grant (its provider-tokens item, `source: password`: shared/accounts/connected.ts) and
 * never answered; the grant's settings keep the servers and usernames. Connecting the same address
 * again re-authenticates its grant (same ID, `grant.updated`).
 */
/**
 * Checks the logins side by side (IMAP, SMTP, and the CalDAV and CardDAV servers when named, whose
 * homes are discovered with the IMAP credentials); a 400 naming what each refused. Answers the DAV
 * settings the grant keeps.
 */
async function verifyAll(
  account: ImapAccount,
  passwords: ImapPasswords,
  dav: { caldav_url?: string; carddav_url?: string },
): Promise<DavSettings> {
  const [imap, smtp, homes] = await Promise.allSettled([
    verifyImap(account.imap, { pass: passwords.imap_password }),
    verifySmtp(account.smtp, passwords.smtp_password),
    discoverHomes({ type: 'basic', username: account.imap.username, password: passwords.imap_password }, dav),
  ]);
  const refused = [imap, smtp, homes].flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (refused.length) {
    const other = refused.find((e) => !(e instanceof InvalidRequestError));
    if (other) throw other;
    throw new InvalidRequestError(
      `The account could not be connected: ${refused.map((e) => (e as Error).message).join('; ')}`,
    );
  }
  return (homes as PromiseFulfilledResult<DavSettings>).value;
}

/** The CalDAV and CardDAV URLs a request names (checked), else the defaults given. */
function davUrlsOf(
  settings: CreateCustomGrantBody['settings'],
  defaults: { caldav_url?: string; carddav_url?: string } = {},
) {
  const caldav = settings.caldav_url ?? defaults.caldav_url;
  const carddav = settings.carddav_url ?? defaults.carddav_url;
  return {
    ...(caldav ? { caldav_url: checkDavUrl('caldav_url', caldav) } : {}),
    ...(carddav ? { carddav_url: checkDavUrl('carddav_url', carddav) } : {}),
  };
}

export async function customImapGrant(
  app: ApplicationContext,
  body: CreateCustomGrantBody,
  meta: { ip: string; userAgent: string },
): Promise<GrantRecord> {
  if (body.workspace_id !== undefined) throw new InvalidRequestError("'workspace_id' applies to Agent Accounts only");
  const { account, passwords } = imapAccountOf(body);
  const dav = await verifyAll(account, passwords, davUrlsOf(body.settings));
  const { grant } = await connectGrant({
    applicationId: app.applicationId,
    provider: IMAP_PROVIDER,
    email: account.email,
    ...(body.name !== undefined ? { name: body.name } : {}),
    providerUserId: account.imap.username,
    scope: ['email'],
    settings: { ...grantSettingsOf(account), ...dav },
    tokens: { source: 'password', passwords },
    ip: meta.ip,
    userAgent: meta.userAgent,
  });
  return grant;
}

/**
 * The IMAP presets (`icloud`, `yahoo`): the account's address (`username`, or `email`) and an app
 * password (`password`, or `app_password`), with the provider's own IMAP and SMTP servers, or those
 * its connector's settings name (`imap_host`, `smtp_host`... as `issuer` replaces an authorization
 * server). Checked and stored as an IMAP grant is, under the preset's provider.
 */
export async function customPresetGrant(
  app: ApplicationContext,
  body: CreateCustomGrantBody,
  meta: { ip: string; userAgent: string },
): Promise<GrantRecord> {
  if (body.workspace_id !== undefined) throw new InvalidRequestError("'workspace_id' applies to Agent Accounts only");
  const provider = body.provider as Provider;
  const s = body.settings;
  const address = (s.username ?? s.email ?? s.email_address)?.trim().toLowerCase();
  const password = s.password ?? s.app_password;
  if (!address || !address.includes('@'))
    throw new InvalidRequestError(
      `'settings.username' (the account's email address) is required for a ${provider} grant`,
    );
  if (!password)
    throw new InvalidRequestError(
      `'settings.password' (an app password of the account) is required for a ${provider} grant`,
    );
  const connector = await connectorForAuth(app.applicationId, provider);
  const account = providerAccountOf({ email: address, provider }, connector?.mail);
  const dav = await verifyAll(
    account,
    { imap_password: password, smtp_password: password },
    davUrlsOf(s, presetDavServers(provider, connector?.mail)),
  );
  const { grant } = await connectGrant({
    applicationId: app.applicationId,
    provider,
    email: address,
    ...(body.name !== undefined ? { name: body.name } : {}),
    providerUserId: address,
    scope: ['email'],
    settings: { ...grantSettingsOf(account), ...dav },
    tokens: { source: 'password', passwords: { imap_password: password, smtp_password: password } },
    ip: meta.ip,
    userAgent: meta.userAgent,
  });
  return grant;
}
