import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkConnectorSettings,
  checkCredential,
  checkScope,
  credentialProviders,
  PROVIDER_RULES,
} from '#shared/connectors/rules';
import { detectDomain, detectProviderOf } from '#shared/providers/mail-domains';
import { InvalidRequestError } from '#shared/errors';
import { CONNECTED_PROVIDERS } from '#schemas/grants';
import { CONNECTOR_PROVIDERS } from '#schemas/connectors';

/** The connector and credential registry, and the provider detection table, without the API around them. */
const refusal = (act: () => unknown): string => {
  try {
    act();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return (error as Error).message;
  }
  throw new Error('expected a 400');
};

const rsaPem = (bits: number) =>
  generateKeyPairSync('rsa', { modulusLength: bits }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const serviceAccount = (privateKey: string) => ({
  type: 'service_account',
  project_id: 'demo-project',
  private_key_id: 'abc123',
  private_key: privateKey,
  client_email: 'robot@demo-project.iam.gserviceaccount.com',
});

describe('Registry: PROVIDER_RULES', () => {
  it('covers every connector provider, and its OAuth providers are the ones hosted OAuth connects', () => {
    expect(Object.keys(PROVIDER_RULES).sort()).toEqual([...CONNECTOR_PROVIDERS].sort());
    expect(CONNECTOR_PROVIDERS.filter((p) => PROVIDER_RULES[p].oauth).sort()).toEqual([...CONNECTED_PROVIDERS].sort());
  });

  it('fits serviceaccount to google, adminconsent to microsoft, connector to the OAuth providers', () => {
    expect(credentialProviders('serviceaccount')).toEqual(['google']);
    expect(credentialProviders('adminconsent')).toEqual(['microsoft']);
    expect(credentialProviders('connector').sort()).toEqual([...CONNECTED_PROVIDERS].sort());
  });
});

describe('Function: checkConnectorSettings', () => {
  it('requires client_id and client_secret of OAuth providers, unless a stored secret stays', () => {
    expect(refusal(() => checkConnectorSettings('google', {}))).toBe(
      "'settings.client_id', 'settings.client_secret' are required for a google connector",
    );
    expect(checkConnectorSettings('google', { client_id: 'id' }, true)).toEqual({ client_id: 'id' });
  });

  it('refuses settings a provider does not take, naming them and what it takes', () => {
    expect(refusal(() => checkConnectorSettings('imap', { client_id: 'x' }))).toBe(
      "'settings.client_id' does not apply to a imap connector; it takes no settings",
    );
    expect(
      refusal(() => checkConnectorSettings('google', { client_id: 'x', client_secret: 'y', tenant: 'common' })),
    ).toMatch(/^'settings.tenant' does not apply to a google connector; it takes settings.client_id/);
  });

  it('checks tenants and issuers', () => {
    const base = { client_id: 'x', client_secret: 'y' };
    for (const tenant of ['common', 'organizations', 'contoso.onmicrosoft.com', '72f988bf-86f1-41af-91ab-2d7cd011db47'])
      expect(checkConnectorSettings('microsoft', { ...base, tenant }).tenant).toBe(tenant);
    expect(refusal(() => checkConnectorSettings('microsoft', { ...base, tenant: 'not a tenant' }))).toMatch(
      /^'settings.tenant' must be common, organizations, consumers/,
    );
    expect(checkConnectorSettings('google', { ...base, issuer: 'https://id.example.com/realms/x' }).issuer).toBe(
      'https://id.example.com/realms/x',
    );
    // The tests run in local mode: http to loopback is accepted, http elsewhere never.
    expect(checkConnectorSettings('google', { ...base, issuer: 'http://127.0.0.1:9000' }).issuer).toBe(
      'http://127.0.0.1:9000',
    );
    for (const issuer of [
      'http://id.example.com',
      'https://id.example.com/?x=1',
      'https://id.example.com/#x',
      'ftp://id.example.com',
      'nope',
    ]) {
      expect(
        refusal(() => checkConnectorSettings('google', { ...base, issuer })),
        issuer,
      ).toMatch(/^'settings.issuer' must be an https URL/);
    }
  });
});

describe('Function: checkScope', () => {
  it('takes any scope for most OAuth providers, none for zoom, three for ews', () => {
    expect(checkScope('google', ['openid', 'email'])).toEqual(['openid', 'email']);
    expect(refusal(() => checkScope('zoom', ['meeting:write']))).toBe(
      "'scope' does not apply to a zoom connector: set the scopes on the zoom app itself",
    );
    expect(checkScope('ews', ['ews.messages'])).toEqual(['ews.messages']);
    expect(refusal(() => checkScope('ews', ['Mail.Read']))).toBe(
      "'scope' of a ews connector may only contain: ews.messages, ews.calendar, ews.contacts",
    );
  });
});

describe('Function: checkCredential', () => {
  it('accepts a service account key file with an RSA key', () => {
    const data = {
      ...serviceAccount(rsaPem(2048)),
      client_id: '123',
      token_uri: 'https://oauth2.googleapis.com/token',
    };
    expect(checkCredential('google', 'serviceaccount', data)).toBe(data);
  });

  it('refuses a type that does not fit the provider, naming the rule', () => {
    expect(refusal(() => checkCredential('microsoft', 'serviceaccount', {}))).toMatch(
      /^credential_type 'serviceaccount' does not fit provider microsoft: serviceaccount is for google, adminconsent for microsoft/,
    );
    expect(refusal(() => checkCredential('imap', 'connector', {}))).toMatch(
      /^credential_type 'connector' does not fit provider imap/,
    );
  });

  it('refuses private keys that are not PEM RSA keys of 2048 bits or more, without quoting them', () => {
    const garbage = '-----BEGIN PRIVATE KEY-----\nSENTINEL-not-a-key\n-----END PRIVATE KEY-----\n';
    const message = refusal(() => checkCredential('google', 'serviceaccount', serviceAccount(garbage)));
    expect(message).toMatch(/^'credential_data.private_key' is not a readable PEM private key/);
    expect(message).not.toContain('SENTINEL');
    expect(refusal(() => checkCredential('google', 'serviceaccount', serviceAccount('SENTINEL')))).toMatch(
      /^'credential_data.private_key' must be a PEM private key/,
    );
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    expect(refusal(() => checkCredential('google', 'serviceaccount', serviceAccount(ec)))).toBe(
      "'credential_data.private_key' must be an RSA private key",
    );
    expect(refusal(() => checkCredential('google', 'serviceaccount', serviceAccount(rsaPem(1024))))).toBe(
      "'credential_data.private_key' must be an RSA key of at least 2048 bits",
    );
    const publicKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString();
    expect(refusal(() => checkCredential('google', 'serviceaccount', serviceAccount(publicKey)))).toMatch(
      /^'credential_data.private_key' is not a readable PEM private key/,
    );
  });

  it('names missing, unknown and empty fields', () => {
    expect(refusal(() => checkCredential('microsoft', 'adminconsent', { client_id: 'x' }))).toBe(
      "'credential_data.client_secret', 'credential_data.tenant' are required for credential_type adminconsent",
    );
    expect(
      refusal(() => checkCredential('google', 'connector', { client_id: 'x', client_secret: 'y', tenant: 'common' })),
    ).toBe("'credential_data.tenant' is not part of a connector credential; it takes client_id, client_secret");
    expect(
      checkCredential('microsoft', 'connector', { client_id: 'x', client_secret: 'y', tenant: 'common' }).tenant,
    ).toBe('common');
    expect(refusal(() => checkCredential('yahoo', 'connector', { client_id: ' ', client_secret: 'y' }))).toBe(
      "'credential_data.client_id' must not be empty",
    );
    expect(
      refusal(() => checkCredential('google', 'serviceaccount', { ...serviceAccount(rsaPem(2048)), type: 'user' })),
    ).toBe("'credential_data.type' must be service_account, as in the service account key file");
  });
});

describe('Function: detectDomain', () => {
  it.each([
    ['gmail.com', 'google', undefined],
    ['googlemail.com', 'google', undefined],
    ['hotmail.co.uk', 'microsoft', undefined],
    ['outlook.com', 'microsoft', undefined],
    ['msn.com', 'microsoft', undefined],
    ['yahoo.fr', 'yahoo', undefined],
    ['yahoo.com.au', 'yahoo', undefined],
    ['me.com', 'icloud', undefined],
    ['aol.com', 'imap', 'aol'],
  ])('%s → %s', (domain, provider, type) => {
    expect(detectDomain(domain)).toEqual({ provider, ...(type ? { type } : {}) });
  });

  it.each(['example.com', 'yahoo.example.com', 'constructor', '__proto__', 'toString.com'])(
    'does not detect %s',
    (domain) => {
      expect(detectDomain(domain)).toBeUndefined();
    },
  );

  it('reads the domain of an address case-insensitively', () => {
    expect(detectProviderOf('Ann@GMail.COM')).toBe('google');
    expect(detectProviderOf('ann@company.example')).toBeUndefined();
  });
});
