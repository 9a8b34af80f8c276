import type { ConnectorProvider } from '#schemas/connectors';

/**
 * Well-known mail domains and the provider that hosts each (POST /v3/providers/detect, the hosted
 * login page's address form): a built-in table, deliberately without network lookups.
 */
export interface Detected {
  provider: ConnectorProvider;
  /** For imap: which mail service. */
  type?: string;
}

/** Exact domains. */
const DOMAINS: Record<string, Detected> = {
  'gmail.com': { provider: 'google' },
  'googlemail.com': { provider: 'google' },
  'outlook.com': { provider: 'microsoft' },
  'hotmail.com': { provider: 'microsoft' },
  'live.com': { provider: 'microsoft' },
  'msn.com': { provider: 'microsoft' },
  'passport.com': { provider: 'microsoft' },
  'windowslive.com': { provider: 'microsoft' },
  'ymail.com': { provider: 'yahoo' },
  'rocketmail.com': { provider: 'yahoo' },
  'icloud.com': { provider: 'icloud' },
  'me.com': { provider: 'icloud' },
  'mac.com': { provider: 'icloud' },
  'aol.com': { provider: 'imap', type: 'aol' },
  'aim.com': { provider: 'imap', type: 'aol' },
  'gmx.com': { provider: 'imap', type: 'gmx' },
  'gmx.net': { provider: 'imap', type: 'gmx' },
  'gmx.de': { provider: 'imap', type: 'gmx' },
  'web.de': { provider: 'imap', type: 'webde' },
  'mail.com': { provider: 'imap', type: 'mailcom' },
  'zoho.com': { provider: 'imap', type: 'zoho' },
  'zohomail.com': { provider: 'imap', type: 'zoho' },
  'fastmail.com': { provider: 'imap', type: 'fastmail' },
  'fastmail.fm': { provider: 'imap', type: 'fastmail' },
  'yandex.com': { provider: 'imap', type: 'yandex' },
  'yandex.ru': { provider: 'imap', type: 'yandex' },
  'mail.ru': { provider: 'imap', type: 'mailru' },
  'qq.com': { provider: 'imap', type: 'qq' },
  '163.com': { provider: 'imap', type: 'netease' },
  '126.com': { provider: 'imap', type: 'netease' },
};

/** Country variants: the first label, then a country suffix (yahoo.co.uk, hotmail.fr, outlook.com.au). */
const COUNTRY_VARIANTS: Record<string, Detected> = {
  yahoo: { provider: 'yahoo' },
  hotmail: { provider: 'microsoft' },
  outlook: { provider: 'microsoft' },
  live: { provider: 'microsoft' },
};
const COUNTRY_SUFFIX = /^(?:[a-z]{2}|com|co\.[a-z]{2}|com\.[a-z]{2})$/;

export function detectDomain(domain: string): Detected | undefined {
  // Own properties only: a domain named like an Object.prototype member must not match.
  if (Object.hasOwn(DOMAINS, domain)) return DOMAINS[domain];
  const dot = domain.indexOf('.');
  if (dot < 0) return undefined;
  const label = domain.slice(0, dot);
  const variant = Object.hasOwn(COUNTRY_VARIANTS, label) ? COUNTRY_VARIANTS[label] : undefined;
  return variant && COUNTRY_SUFFIX.test(domain.slice(dot + 1)) ? variant : undefined;
}

/** The provider of an address by its domain (the built-in table alone, no connector check), or undefined. */
export function detectProviderOf(email: string): ConnectorProvider | undefined {
  return detectDomain(email.slice(email.lastIndexOf('@') + 1).toLowerCase())?.provider;
}
