import { createPrivateKey } from 'node:crypto';
import { InvalidRequestError } from '#shared/errors';
import { checkServerUrl, SERVER_URL_RULE, usableServerUrl } from '#shared/net/server-url';
import { hasTenants, scopesOnApp } from '#shared/providers/oauth';
import {
  CONNECTOR_PROVIDERS,
  type ConnectorProvider,
  type ConnectorSettings,
  type CredentialType,
} from '#schemas/connectors';

/**
 * What each provider's connector and each credential type take: the registry the connector and
 * credential services check requests against, kept as data so that one table answers "may a
 * microsoft connector have a tenant?" or "which providers take a service account?".
 */
type SettingName = keyof ConnectorSettings;

interface ProviderRule {
  label: string;
  /** A provider auth app (OAuth): client_id and client_secret required, credentials of type `connector` allowed. */
  oauth: boolean;
  /** Settings the connector takes (client_id and client_secret are required when `oauth`). */
  settings: readonly SettingName[];
  /** Default scopes: any, none (the provider configures them elsewhere), or one of a fixed set. */
  scope: 'any' | 'none' | readonly string[];
  /** Credential types the provider's connector takes besides `connector` (OAuth providers). */
  bulk: readonly Exclude<CredentialType, 'connector'>[];
}

const MAIL_SERVERS = ['imap_host', 'imap_port', 'smtp_host', 'smtp_port'] as const;
/** iCloud's CalDAV and CardDAV servers, replaced as its mail servers are. */
const DAV_SERVERS = ['caldav_url', 'carddav_url'] as const;

export const PROVIDER_RULES: Record<ConnectorProvider, ProviderRule> = {
  // The mail servers (imap_*, smtp_*) replace the provider's own, as issuer replaces its authorization server.
  google: {
    label: 'Google',
    oauth: true,
    settings: [
      'client_id',
      'client_secret',
      'issuer',
      'api_base_url',
      'topic_name',
      'pubsub_service_account',
      'pubsub_audience',
      ...MAIL_SERVERS,
    ],
    scope: 'any',
    bulk: ['serviceaccount'],
  },
  microsoft: {
    label: 'Microsoft',
    oauth: true,
    settings: ['client_id', 'client_secret', 'tenant', 'issuer', 'api_base_url', ...MAIL_SERVERS],
    scope: 'any',
    bulk: ['adminconsent'],
  },
  yahoo: {
    label: 'Yahoo',
    oauth: true,
    settings: ['client_id', 'client_secret', 'issuer', ...MAIL_SERVERS],
    scope: 'any',
    bulk: [],
  },
  // Zoom takes its scopes from the Zoom app's own configuration.
  zoom: { label: 'Zoom', oauth: true, settings: ['client_id', 'client_secret', 'issuer'], scope: 'none', bulk: [] },
  imap: { label: 'IMAP', oauth: false, settings: [], scope: 'none', bulk: [] },
  icloud: { label: 'iCloud', oauth: false, settings: [...MAIL_SERVERS, ...DAV_SERVERS], scope: 'none', bulk: [] },
  ews: {
    label: 'Exchange (EWS)',
    oauth: false,
    settings: [],
    scope: ['ews.messages', 'ews.calendar', 'ews.contacts'],
    bulk: [],
  },
};

/** The provider of a path, or a 400 listing the valid ones. */
export function parseProvider(value: string): ConnectorProvider {
  if ((CONNECTOR_PROVIDERS as readonly string[]).includes(value)) return value as ConnectorProvider;
  throw new InvalidRequestError(`'provider' must be one of: ${CONNECTOR_PROVIDERS.join(', ')}`);
}

/** Which providers take a credential type, in words for a 400. */
export function credentialProviders(type: CredentialType): ConnectorProvider[] {
  return CONNECTOR_PROVIDERS.filter((p) =>
    type === 'connector' ? PROVIDER_RULES[p].oauth : PROVIDER_RULES[p].bulk.includes(type),
  );
}

const HOST = /^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)$/;
const TENANT =
  /^(?:common|organizations|consumers|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63})$/;

/** An OpenID Connect issuer: https (http to loopback in local mode only), no query, fragment or user information. */
export function checkIssuer(value: string, field: string): string {
  if (!usableServerUrl(value))
    throw new InvalidRequestError(
      `'${field}' must be ${SERVER_URL_RULE} naming an OpenID Connect issuer, without query, fragment or user information`,
    );
  return value;
}

export function checkTenant(value: string, field: string): void {
  if (!TENANT.test(value))
    throw new InvalidRequestError(
      `'${field}' must be common, organizations, consumers, a tenant ID (GUID) or a tenant domain name`,
    );
}

const plural = (names: string[], one: string, many: string) => (names.length > 1 ? many : one);
const quoted = (prefix: string, names: string[]) => names.map((n) => `'${prefix}.${n}'`).join(', ');

/**
 * The settings of a provider's connector, checked: only the provider's fields, client_id and
 * client_secret present for OAuth providers (`secretKept`: a stored secret stands in for a missing one).
 */
export function checkConnectorSettings(
  provider: ConnectorProvider,
  settings: ConnectorSettings,
  secretKept = false,
): ConnectorSettings {
  const rule = PROVIDER_RULES[provider];
  const foreign = Object.keys(settings).filter((name) => !rule.settings.includes(name as SettingName));
  if (foreign.length) {
    const takes = rule.settings.length
      ? `; it takes ${rule.settings.map((n) => `settings.${n}`).join(', ')}`
      : '; it takes no settings';
    throw new InvalidRequestError(
      `${quoted('settings', foreign)} ${plural(foreign, 'does', 'do')} not apply to a ${provider} connector${takes}`,
    );
  }
  if (rule.oauth) {
    const missing = ['client_id', ...(secretKept ? [] : ['client_secret'])].filter(
      (name) => settings[name as SettingName] === undefined,
    );
    if (missing.length)
      throw new InvalidRequestError(
        `${quoted('settings', missing)} ${plural(missing, 'is', 'are')} required for a ${provider} connector`,
      );
  }
  if (settings.tenant !== undefined) checkTenant(settings.tenant, 'settings.tenant');
  if (settings.issuer !== undefined) checkIssuer(settings.issuer, 'settings.issuer');
  if (settings.api_base_url !== undefined) checkServerUrl(settings.api_base_url, 'settings.api_base_url');
  for (const field of ['pubsub_service_account', 'pubsub_audience'] as const)
    if (settings[field] !== undefined && settings.topic_name === undefined)
      throw new InvalidRequestError(`'settings.${field}' needs 'settings.topic_name' (the topic its pushes come from)`);
  for (const field of DAV_SERVERS)
    if (settings[field] !== undefined) checkServerUrl(settings[field], `settings.${field}`);
  for (const [host, port] of [
    ['imap_host', 'imap_port'],
    ['smtp_host', 'smtp_port'],
  ] as const) {
    if (settings[port] !== undefined && settings[host] === undefined)
      throw new InvalidRequestError(`'settings.${port}' needs 'settings.${host}'`);
    if (settings[host] !== undefined && !HOST.test(settings[host]!))
      throw new InvalidRequestError(`'settings.${host}' must be a host name or an IP address, without scheme or port`);
  }
  return settings;
}

export function checkScope(provider: ConnectorProvider, scope: readonly string[]): string[] {
  const rule = PROVIDER_RULES[provider].scope;
  if (rule === 'any' || scope.length === 0) return [...scope];
  if (rule === 'none') {
    throw new InvalidRequestError(
      scopesOnApp(provider)
        ? `'scope' does not apply to a ${provider} connector: set the scopes on the ${provider} app itself`
        : `'scope' does not apply to a ${provider} connector`,
    );
  }
  const unknown = scope.filter((s) => !rule.includes(s));
  if (unknown.length)
    throw new InvalidRequestError(`'scope' of a ${provider} connector may only contain: ${rule.join(', ')}`);
  return [...scope];
}

/** The fields of credential_data each type requires and accepts (a service account: its key file). */
const CREDENTIAL_FIELDS: Record<
  CredentialType,
  { required: readonly string[]; optional: (provider: ConnectorProvider) => readonly string[] }
> = {
  serviceaccount: {
    required: ['type', 'project_id', 'private_key_id', 'private_key', 'client_email'],
    optional: () => [
      'client_id',
      'auth_uri',
      'token_uri',
      'auth_provider_x509_cert_url',
      'client_x509_cert_url',
      'universe_domain',
    ],
  },
  adminconsent: { required: ['client_id', 'client_secret', 'tenant'], optional: () => [] },
  connector: {
    required: ['client_id', 'client_secret'],
    optional: (provider) => (hasTenants(provider) ? ['tenant'] : []),
  },
};

const MIN_RSA_BITS = 2048;

/** A PEM RSA private key of at least 2048 bits; never echoes the value. */
function checkPrivateKey(pem: string, field: string): void {
  const fail = (why: string) => new InvalidRequestError(`'${field}' ${why}`);
  if (!pem.includes('-----BEGIN'))
    throw fail('must be a PEM private key (-----BEGIN PRIVATE KEY----- …), as in the service account key file');
  let details: { type: string; bits: number | undefined };
  try {
    const key = createPrivateKey({ key: pem, format: 'pem' });
    details = { type: key.asymmetricKeyType ?? '', bits: key.asymmetricKeyDetails?.modulusLength };
  } catch {
    // The parser's message could quote the input: never pass it on.
    throw fail('is not a readable PEM private key (unencrypted PKCS#8 or PKCS#1), as in the service account key file');
  }
  if (details.type !== 'rsa') throw fail('must be an RSA private key');
  if ((details.bits ?? 0) < MIN_RSA_BITS) throw fail(`must be an RSA key of at least ${MIN_RSA_BITS} bits`);
}

/** Checks that `type` fits `provider` and that `data` holds exactly its fields; the data, trimmed of nothing. */
export function checkCredential(
  provider: ConnectorProvider,
  type: CredentialType,
  data: Record<string, string>,
): Record<string, string> {
  const fits = credentialProviders(type);
  if (!fits.includes(provider)) {
    throw new InvalidRequestError(
      `credential_type '${type}' does not fit provider ${provider}: serviceaccount is for google, adminconsent for microsoft, connector for OAuth providers (${credentialProviders('connector').join(', ')})`,
    );
  }
  const rule = CREDENTIAL_FIELDS[type];
  const accepted = new Set([...rule.required, ...rule.optional(provider)]);
  const foreign = Object.keys(data).filter((name) => !accepted.has(name));
  if (foreign.length) {
    throw new InvalidRequestError(
      `${quoted('credential_data', foreign)} ${plural(foreign, 'is', 'are')} not part of a ${type} credential; it takes ${[...accepted].join(', ')}`,
    );
  }
  const missing = rule.required.filter((name) => data[name] === undefined);
  if (missing.length)
    throw new InvalidRequestError(
      `${quoted('credential_data', missing)} ${plural(missing, 'is', 'are')} required for credential_type ${type}`,
    );
  const empty = Object.keys(data).filter((name) => data[name]!.trim() === '');
  if (empty.length) throw new InvalidRequestError(`${quoted('credential_data', empty)} must not be empty`);
  if (type === 'serviceaccount') {
    if (data.type !== 'service_account')
      throw new InvalidRequestError(
        "'credential_data.type' must be service_account, as in the service account key file",
      );
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(data.client_email!))
      throw new InvalidRequestError("'credential_data.client_email' must be the service account's email address");
    checkPrivateKey(data.private_key!, 'credential_data.private_key');
  }
  if (data.tenant !== undefined) checkTenant(data.tenant, 'credential_data.tenant');
  return data;
}
