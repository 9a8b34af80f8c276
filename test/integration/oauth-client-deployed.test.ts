import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuthorizationServer } from '#shared/oauth/client';
import { startOidcServer, type LocalOidcServer } from '../../scripts/local-stack/oidc-local';

/**
 * shared/oauth as deployed (WEBHOOK_LOCAL_MODE=false): https only, and never a loopback or private
 * address, refused before any connection. A raw TCP listener counts connection attempts; the local
 * OpenID Connect server holds an armed fault that any discovery request would fire.
 */
process.env.WEBHOOK_LOCAL_MODE = 'false';
// Read when the module loads, like a Lambda cold start: imported only after the variable is set.
const oauth = { ...(await import('#shared/oauth/client')), ...(await import('#shared/providers/oauth')) };

let tcp: Server;
let tcpPort: number;
let tcpConnections = 0;
let oidc: LocalOidcServer;

beforeAll(async () => {
  tcp = createServer((socket) => {
    tcpConnections++;
    socket.destroy();
  });
  tcp.listen(0, '127.0.0.1');
  await once(tcp, 'listening');
  tcpPort = (tcp.address() as AddressInfo).port;
  oidc = await startOidcServer({
    clients: [{ client_id: 'app', client_secret: 'secret', redirect_uris: ['http://127.0.0.1:9/cb'] }],
  });
});

afterAll(async () => {
  await oidc?.stop();
  await new Promise((resolve) => tcp?.close(resolve));
});

beforeEach(() => {
  tcpConnections = 0;
});

async function refused(promise: Promise<unknown>, message: RegExp) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(oauth.ProviderConfigurationError);
  expect((error as Error).message).toMatch(message);
}

describe('shared/oauth, deployed', () => {
  it('refuses to discover an issuer over plain http, even on loopback', async () => {
    oidc.failNext({ endpoint: 'discovery', status: 503 });
    await refused(
      oauth.authorizationServer('google', { issuer: oidc.issuers.google }),
      /only (https URLs are fetched|requests to HTTPS are allowed)/,
    );
    await refused(
      oauth.authorizationServer('google', { issuer: `http://127.0.0.1:${tcpPort}/google` }),
      /only (https URLs are fetched|requests to HTTPS are allowed)/,
    );
    expect(tcpConnections).toBe(0);
    expect(oidc.pending()).toBe(1);
  });

  it('refuses https to loopback and private addresses before connecting', async () => {
    await refused(
      oauth.authorizationServer('microsoft', { issuer: `https://127.0.0.1:${tcpPort}/tenant/v2.0` }),
      /127\.0\.0\.1 resolves to 127\.0\.0\.1, which is not a public address/,
    );
    await refused(
      oauth.authorizationServer('microsoft', { issuer: `https://[::1]:${tcpPort}/tenant/v2.0` }),
      /not a public address/,
    );
    await refused(
      oauth.authorizationServer('microsoft', { issuer: 'https://169.254.169.254/latest' }),
      /not a public address/,
    );
    expect(tcpConnections).toBe(0);
  });

  it('refuses token requests to endpoints the policy forbids, whatever the server object says', async () => {
    const local: AuthorizationServer = {
      issuer: oidc.issuers.google,
      authorization_endpoint: `${oidc.issuers.google}/auth`,
      token_endpoint: `https://127.0.0.1:${tcpPort}/token`,
      jwks_uri: `https://127.0.0.1:${tcpPort}/jwks`,
      revocation_endpoint: `http://127.0.0.1:${tcpPort}/revoke`,
    };
    const client = { client_id: 'app', client_secret: 'secret' };
    await refused(oauth.refreshTokens(local, client, 'rt'), /not a public address/);
    await refused(
      oauth.exchangeCode(local, client, {
        code: 'c',
        redirect_uri: 'http://127.0.0.1:9/cb',
        code_verifier: oauth.pkcePair().code_verifier,
        nonce: 'n',
      }),
      /not a public address/,
    );
    await refused(
      oauth.clientCredentialsToken(local, client, { scope: [oauth.MICROSOFT_APP_SCOPE] }),
      /not a public address/,
    );
    await refused(oauth.revokeToken(local, client, 'rt'), /https/i);
    expect(tcpConnections).toBe(0);
  });

  it('still builds the built-in providers and their URLs without the network', async () => {
    const google = await oauth.authorizationServer('google', {});
    const url = oauth.authorizationUrl(google, {
      client_id: 'c',
      redirect_uri: 'https://api.example.com/cb',
      scope: ['openid'],
      state: 's',
      nonce: 'n',
      code_challenge: oauth.pkcePair().code_challenge,
    });
    expect(url.origin).toBe('https://accounts.google.com');
  });
});
