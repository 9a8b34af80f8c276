import type { ApplicationContext } from '#shared/applications/authenticate';
import * as repo from '#shared/db/connectors';
import { InvalidRequestError } from '#shared/errors';
import type { ConnectorProvider } from '#schemas/connectors';

/**
 * POST /v3/providers/detect: the provider of an email address, from a built-in table of well-known
 * mail domains. Deliberately no network: no MX or autodiscovery lookup happens here, so an address
 * at a company domain hosted by Google or Microsoft is not detected (a deployed MX lookup is out of
 * scope for now). Without `all_provider_types`, only providers the application has a connector for
 * count as detected.
 */
interface Detected {
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

type DetectInput = { email?: string; all_provider_types?: boolean };

/** Detects from the query (as the published contract sends it) or from a JSON body, not both. */
export async function detectProvider(app: ApplicationContext, query: DetectInput, body: DetectInput | undefined) {
  const inQuery = Object.keys(query).length > 0;
  if (inQuery && body && Object.keys(body).length > 0) throw new InvalidRequestError('Send email and all_provider_types either in the query or in the JSON body, not both');
  const input = inQuery ? query : (body ?? {});
  const email = input.email;
  if (email === undefined) throw new InvalidRequestError("'email' is required (as a query parameter or in the JSON body)");
  const at = email.lastIndexOf('@');
  const found = detectDomain(email.slice(at + 1).toLowerCase());
  const usable = found && (input.all_provider_types || (await repo.getConnector(app.applicationId, found.provider)) !== undefined);
  return usable ? { email_address: email, detected: true, provider: found.provider, ...(found.type ? { type: found.type } : {}) } : { email_address: email, detected: false };
}
