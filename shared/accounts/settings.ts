import type { CreateCustomGrantBody } from '#schemas/grants';
import { InvalidRequestError } from '#shared/errors';
import { detectDomain } from '#shared/providers/mail-domains';

/**
 * An IMAP grant's servers: what `POST /v3/connect/custom` with `provider: "imap"` names, completed
 * for well-known mail domains (hosts and ports of their IMAP and submission servers) and defaulted
 * the way mail clients do: IMAP on 993 with TLS from the first byte, SMTP submission on 587 with
 * STARTTLS (465: TLS from the first byte). Passwords are kept apart (sealed: shared/connect/custom-account.ts).
 */
export type TlsMode = 'implicit' | 'starttls';

export interface ServerAddress {
  host: string;
  port: number;
  /** How the connection is secured: TLS from the first byte, or STARTTLS (plain text only to loopback in local mode: shared/imap/connect.ts). */
  tls: TlsMode;
  username: string;
}

export interface ImapAccount {
  email: string;
  imap: ServerAddress;
  smtp: ServerAddress;
}

export interface ImapPasswords {
  imap_password: string;
  smtp_password: string;
}

/** The settings a create request for an IMAP grant may name. */
export const IMAP_SETTINGS = [
  'imap_username',
  'imap_password',
  'imap_host',
  'imap_port',
  'smtp_host',
  'smtp_port',
  'smtp_username',
  'smtp_password',
  'email',
  'email_address',
  'caldav_url',
  'carddav_url',
] as const;

/**
 * The IMAP and submission servers of the mail services the domain table knows (shared/providers/
 * mail-domains.ts: which service a domain belongs to, country variants included), from their
 * published client settings. Keyed by the detected provider, or for `imap` by its service type.
 */
const SERVERS: Record<string, { imap: string; smtp: string; smtpPort: number }> = {
  google: { imap: 'imap.gmail.com', smtp: 'smtp.gmail.com', smtpPort: 587 },
  microsoft: { imap: 'outlook.office365.com', smtp: 'smtp-mail.outlook.com', smtpPort: 587 },
  yahoo: { imap: 'imap.mail.yahoo.com', smtp: 'smtp.mail.yahoo.com', smtpPort: 465 },
  icloud: { imap: 'imap.mail.me.com', smtp: 'smtp.mail.me.com', smtpPort: 587 },
  aol: { imap: 'imap.aol.com', smtp: 'smtp.aol.com', smtpPort: 465 },
  gmx: { imap: 'imap.gmx.net', smtp: 'mail.gmx.net', smtpPort: 587 },
  webde: { imap: 'imap.web.de', smtp: 'smtp.web.de', smtpPort: 587 },
  mailcom: { imap: 'imap.mail.com', smtp: 'smtp.mail.com', smtpPort: 587 },
  fastmail: { imap: 'imap.fastmail.com', smtp: 'smtp.fastmail.com', smtpPort: 465 },
  zoho: { imap: 'imap.zoho.com', smtp: 'smtp.zoho.com', smtpPort: 465 },
  yandex: { imap: 'imap.yandex.com', smtp: 'smtp.yandex.com', smtpPort: 465 },
  mailru: { imap: 'imap.mail.ru', smtp: 'smtp.mail.ru', smtpPort: 465 },
  qq: { imap: 'imap.qq.com', smtp: 'smtp.qq.com', smtpPort: 465 },
};

/** The servers of a well-known mail domain, if it is one. */
export function wellKnownServers(domain: string): { imap: string; smtp: string; smtpPort: number } | undefined {
  const detected = detectDomain(domain);
  if (!detected) return undefined;
  // NetEase serves each of its domains (163.com, 126.com) under its own name.
  if (detected.type === 'netease') return { imap: `imap.${domain}`, smtp: `smtp.${domain}`, smtpPort: 465 };
  const key = detected.type ?? detected.provider;
  return Object.hasOwn(SERVERS, key) ? SERVERS[key] : undefined;
}

const HOST =
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$|^\d{1,3}(?:\.\d{1,3}){3}$|^\[[0-9a-f:.]+\]$/i;

function checkHost(field: string, host: string): string {
  const value = host.trim().toLowerCase();
  if (!HOST.test(value))
    throw new InvalidRequestError(
      `'settings.${field}' must be a host name or an IP address (no scheme, port or path); got '${host}'`,
    );
  return value;
}

/** The account and passwords a create request names (400 naming what is missing or wrong). */
export function imapAccountOf(request: CreateCustomGrantBody): { account: ImapAccount; passwords: ImapPasswords } {
  const s = request.settings;
  const username = s.imap_username ?? s.email ?? s.email_address;
  if (username === undefined)
    throw new InvalidRequestError(
      "'settings.imap_username' is required for an IMAP grant (the account's username, usually its email address)",
    );
  if (s.imap_password === undefined)
    throw new InvalidRequestError(
      "'settings.imap_password' is required for an IMAP grant (the account's password or app password)",
    );
  const address = (s.email ?? s.email_address ?? username).trim().toLowerCase();
  const at = address.lastIndexOf('@');
  if (at < 1 || at === address.length - 1) {
    throw new InvalidRequestError(
      `The IMAP grant needs the account's email address: 'settings.imap_username' is '${username}', not an address; give 'settings.email' as well`,
    );
  }
  const domain = address.slice(at + 1);
  const preset = wellKnownServers(domain);
  const need = (field: 'imap_host' | 'smtp_host') =>
    new InvalidRequestError(
      `'settings.${field}' is required: ${domain} is not a mail domain whose servers are known here (give imap_host and smtp_host, and their ports if not 993 and 587)`,
    );
  const imapHost =
    s.imap_host !== undefined
      ? checkHost('imap_host', s.imap_host)
      : (preset?.imap ??
        (() => {
          throw need('imap_host');
        })());
  const smtpHost =
    s.smtp_host !== undefined
      ? checkHost('smtp_host', s.smtp_host)
      : (preset?.smtp ??
        (() => {
          throw need('smtp_host');
        })());
  const imapPort = s.imap_port ?? 993;
  const smtpPort = s.smtp_port ?? (s.smtp_host === undefined && preset ? preset.smtpPort : 587);
  return {
    account: {
      email: address,
      imap: { host: imapHost, port: imapPort, tls: imapPort === 993 ? 'implicit' : 'starttls', username },
      smtp: {
        host: smtpHost,
        port: smtpPort,
        tls: smtpPort === 465 ? 'implicit' : 'starttls',
        username: s.smtp_username ?? username,
      },
    },
    passwords: { imap_password: s.imap_password, smtp_password: s.smtp_password ?? s.imap_password },
  };
}

/** What the grant keeps in its settings (and answers): servers and usernames, never a password. */
export const grantSettingsOf = (account: ImapAccount): Record<string, unknown> => ({
  imap_username: account.imap.username,
  imap_host: account.imap.host,
  imap_port: account.imap.port,
  smtp_username: account.smtp.username,
  smtp_host: account.smtp.host,
  smtp_port: account.smtp.port,
});

const tlsOf = (port: number, implicitPort: number): TlsMode => (port === implicitPort ? 'implicit' : 'starttls');

/** The servers a grant's settings keep (grantSettingsOf), with their TLS modes as connecting chose them. */
export function accountOfGrant(grant: { email: string; settings?: Record<string, unknown> }): ImapAccount {
  const s = (grant.settings ?? {}) as {
    imap_username: string;
    imap_host: string;
    imap_port: number;
    smtp_username: string;
    smtp_host: string;
    smtp_port: number;
  };
  return {
    email: grant.email,
    imap: { host: s.imap_host, port: s.imap_port, tls: tlsOf(s.imap_port, 993), username: s.imap_username },
    smtp: { host: s.smtp_host, port: s.smtp_port, tls: tlsOf(s.smtp_port, 465), username: s.smtp_username },
  };
}

/**
 * The mail servers of a provider's account (google, microsoft, yahoo over OAuth; the icloud and yahoo
 * presets with an app password), from its connector's settings where they name one, else the
 * provider's own; the username is the account's address.
 */
export function providerAccountOf(
  grant: { email: string; provider: string },
  overrides: { imap_host?: string; imap_port?: number; smtp_host?: string; smtp_port?: number } = {},
): ImapAccount {
  const own = SERVERS[grant.provider];
  const imapHost = overrides.imap_host ?? own?.imap;
  const smtpHost = overrides.smtp_host ?? own?.smtp;
  if (!imapHost || !smtpHost)
    throw new InvalidRequestError(
      `Grants of '${grant.provider}' have no mail servers here: set imap_host and smtp_host in its connector's settings`,
    );
  const imapPort = overrides.imap_host !== undefined ? (overrides.imap_port ?? 993) : 993;
  const smtpPort = overrides.smtp_host !== undefined ? (overrides.smtp_port ?? 587) : own!.smtpPort;
  return {
    email: grant.email,
    imap: { host: imapHost, port: imapPort, tls: tlsOf(imapPort, 993), username: grant.email },
    smtp: { host: smtpHost, port: smtpPort, tls: tlsOf(smtpPort, 465), username: grant.email },
  };
}

/** The CalDAV and CardDAV servers of the presets that have them (iCloud's published client settings). */
const DAV_SERVERS: Record<string, { caldav_url: string; carddav_url: string }> = {
  icloud: { caldav_url: 'https://caldav.icloud.com/', carddav_url: 'https://contacts.icloud.com/' },
};

/**
 * A preset's CalDAV and CardDAV servers: those its connector names; else, when the connector names no
 * mail server of its own either (the account really is the provider's), the provider's own.
 */
export function presetDavServers(
  provider: string,
  overrides: { imap_host?: string; caldav_url?: string; carddav_url?: string } = {},
): { caldav_url?: string; carddav_url?: string } {
  const own = overrides.imap_host === undefined ? DAV_SERVERS[provider] : undefined;
  const caldav = overrides.caldav_url ?? own?.caldav_url;
  const carddav = overrides.carddav_url ?? own?.carddav_url;
  return { ...(caldav ? { caldav_url: caldav } : {}), ...(carddav ? { carddav_url: carddav } : {}) };
}

/** The settings of a preset account (icloud, yahoo): the published contract's `username` and `password` (an app password), `email` and `app_password` as aliases. */
export const PRESET_SETTINGS = [
  'username',
  'password',
  'email',
  'email_address',
  'app_password',
  'caldav_url',
  'carddav_url',
] as const;
