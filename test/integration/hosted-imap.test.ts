import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '../support/harness';
import { expectInvalid } from '../support/expect-error';
import { rememberSecret } from '../support/secrets';

/**
 * The hosted IMAP credential page (`GET /v3/connect/auth?provider=imap`) and its form
 * (`POST /v3/connect/credentials`) over HTTP, without a mail server: every bad authorization request is a
 * 400 JSON error before any page; a good one is our page under a strict policy whose form-action
 * names the redirect URI's origin; the form's token works once, and only from its own page; a server
 * that cannot be reached shows the page again with what failed, the fields kept and a new token.
 * Logins against a real Dovecot, in Chromium: test/e2e/hosted-imap.test.ts.
 */
const { api, gateway, applicationId, otherApi } = useApi();
const REDIRECT = 'http://127.0.0.1:9877/imap/done';
const PASSWORD = `never-shown ${randomBytes(6).toString('hex')}`;

beforeAll(async () => {
  rememberSecret(PASSWORD, 'password typed into the IMAP credential form (hosted-imap.test.ts)');
  expect((await api.post('/v3/applications/redirect-uris', { url: REDIRECT, platform: 'web' })).status).toBe(200);
  const connector = await api.post('/v3/connectors', { provider: 'imap' });
  expect(connector.status, connector.text).toBe(201);
});

const authUrl = (params: Record<string, string> = {}) =>
  `${gateway().url}/v3/connect/auth?${new URLSearchParams({ client_id: applicationId(), redirect_uri: REDIRECT, response_type: 'code', provider: 'imap', state: 'imap-state', ...params })}`;

/** The page of a good request, and its form's token. */
async function openPage(params: Record<string, string> = {}) {
  const response = await fetch(authUrl(params), { redirect: 'manual' });
  const html = await response.text();
  expect(response.status, html).toBe(200);
  const token = /name="flow_token" value="([^"]+)"/.exec(html)?.[1];
  expect(token).toEqual(expect.any(String));
  rememberSecret(token, 'flow token of the IMAP credential page (hosted-imap.test.ts)');
  return { response, html, token: token! };
}

/** The form as a browser sends it (every field, empty ones too). */
function submit(fields: Record<string, string>, headers: Record<string, string> = {}) {
  const form = {
    email: '',
    password: '',
    imap_host: '',
    imap_port: '',
    imap_username: '',
    smtp_host: '',
    smtp_port: '',
    smtp_username: '',
    smtp_password: '',
    ...fields,
  };
  return fetch(`${gateway().url}/v3/connect/credentials`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

describe('GET /v3/connect/auth?provider=imap: bad requests', () => {
  it('answers 400 with the JSON error envelope, before any page, naming what is wrong', async () => {
    const others = await otherApi('no-imap-connector');
    const otherApp = (await others.get('/v3/applications')).body.data.application_id as string;
    expect((await others.post('/v3/applications/redirect-uris', { url: REDIRECT, platform: 'web' })).status).toBe(200);
    const cases: [Record<string, string>, string | RegExp][] = [
      [{ client_id: 'app_01unknown' }, /^Unknown client_id 'app_01unknown'/],
      [
        { redirect_uri: 'https://evil.example/cb' },
        /^redirect_uri 'https:\/\/evil\.example\/cb' is not registered for this application/,
      ],
      [{ redirect_uri: `${REDIRECT}/more` }, /is not registered for this application/],
      [{ response_type: 'token' }, /response_type/],
      [
        { response_type: 'adminconsent' },
        /^response_type=adminconsent is the admin consent flow of provider 'microsoft'/,
      ],
      [{ state: 's'.repeat(257) }, /state/],
      [{ code_challenge_method: 'S256' }, "'code_challenge_method' needs a 'code_challenge'"],
      [{ code_challenge: 'x'.repeat(50), code_challenge_method: 'S256' }, /SHA-256/],
      [
        { credential_id: 'cred_1' },
        "'credential_id' does not apply to provider 'imap': its accounts sign in with their own password",
      ],
      [{ provider: 'imap-ish' }, /^Hosted OAuth is not available for provider 'imap-ish' \(available: .*imap\)$/],
      [{ client_id: otherApp }, /^This application has no 'imap' connector: create one with POST \/v3\/connectors/],
      [{ login_hint: '' }, /login_hint/],
      [{ extra: '1' }, /extra/],
    ];
    for (const [params, message] of cases) {
      const response = await fetch(authUrl(params), { redirect: 'manual' });
      const text = await response.text();
      expect(response.status, `${JSON.stringify(params)}: ${text}`).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(response.headers.get('location')).toBeNull();
      expect(text).not.toContain('flow_token');
      expectInvalid({ status: response.status, headers: response.headers, body: JSON.parse(text), text }, message);
    }
    const missing = await fetch(
      `${gateway().url}/v3/connect/auth?provider=imap&client_id=${applicationId()}&response_type=code`,
    );
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain('redirect_uri');
  });
});

describe('GET /v3/connect/auth?provider=imap: the page', () => {
  it('is our own form under a strict policy whose form-action names the redirect URI, the address prefilled from login_hint', async () => {
    const { response, html } = await openPage({ login_hint: 'ann@gmx.net' });
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'nonce-[^']+';/);
    expect(csp).toContain("form-action 'self' http://127.0.0.1:9877;");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(html).not.toContain('<script');
    expect(html).toContain('<form method="post" action="credentials">');
    expect(html).toMatch(
      /<input id="email" name="email" type="email" autocomplete="email" required value="ann@gmx\.net">/,
    );
    // A well-known domain: its servers are shown as placeholders, the fields stay empty (detected).
    expect(html).toContain('placeholder="imap.gmx.net"');
    expect(html).not.toMatch(/name="imap_host"[^>]*value=/);
  });

  it('offers IMAP on the hosted login page when the application has its connector', async () => {
    const response = await fetch(authUrl({ provider: 'imap,google', state: 'picker' }));
    // google has no connector here: the page lists what the application connects among those asked for.
    const html = await response.text();
    expect(response.status, html).toBe(200);
    expect(html).toContain('Sign in with another provider (IMAP)</a>');
    expect(html).not.toContain('Sign in with Google');
  });
});

describe('POST /v3/connect/credentials', () => {
  it('refuses an unknown token, a used one, and a form sent from another site, with a page saying the sign-in has ended', async () => {
    const unknown = await submit({ flow_token: 'not-a-token', email: 'ann@example.org', password: PASSWORD });
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(unknown.headers.get('location')).toBeNull();
    expect(await unknown.text()).toContain('This sign-in has ended.');

    const { token } = await openPage();
    const crossSite = await submit(
      { flow_token: token, email: 'ann@example.org', password: PASSWORD },
      { 'sec-fetch-site': 'cross-site' },
    );
    expect(crossSite.status).toBe(400);
    expect(await crossSite.text()).toContain('This sign-in has ended.');

    // A refused login uses the token; the page comes back with another one.
    const refused = await submit({
      flow_token: token,
      email: 'ann@example.org',
      password: PASSWORD,
      imap_host: '127.0.0.1',
      imap_port: '1',
      smtp_host: '127.0.0.1',
      smtp_port: '1',
    });
    expect(refused.status).toBe(400);
    const again = await submit({
      flow_token: token,
      email: 'ann@example.org',
      password: PASSWORD,
      imap_host: '127.0.0.1',
      imap_port: '1',
    });
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('This sign-in has ended.');
  });

  it('shows the page again when a server cannot be reached: what failed, the fields kept but never the password, a new token', async () => {
    const { token } = await openPage({ login_hint: 'pat@example.org' });
    const response = await submit({
      flow_token: token,
      email: 'pat@example.org',
      password: PASSWORD,
      imap_host: '127.0.0.1',
      imap_port: '1',
      smtp_host: 'localhost',
      smtp_port: '1',
      smtp_password: PASSWORD,
    });
    const html = await response.text();
    expect(response.status, html).toBe(400);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toContain("form-action 'self' http://127.0.0.1:9877;");
    expect(html).toMatch(
      /<div class="problem" role="alert" id="problem">.*IMAP 127\.0\.0\.1:1: could not connect \(ECONNREFUSED\)/s,
    );
    expect(html).toContain('value="pat@example.org"');
    expect(html).toMatch(/id="imap_host"[^>]*value="127\.0\.0\.1"/);
    expect(html).toMatch(/id="smtp_host"[^>]*value="localhost"/);
    expect(html).toContain('<details open>');
    expect(html).not.toContain(PASSWORD);
    const renewed = /name="flow_token" value="([^"]+)"/.exec(html)?.[1];
    rememberSecret(renewed, 'renewed flow token (hosted-imap.test.ts)');
    expect(renewed).toEqual(expect.any(String));
    expect(renewed).not.toBe(token);

    // What the user can fix without a server: said in the page's words, under yet another token.
    const unknownDomain = await submit({
      flow_token: renewed!,
      email: 'pat@example.org',
      password: PASSWORD,
      imap_port: '99999',
    });
    const next = await unknownDomain.text();
    expect(unknownDomain.status).toBe(400);
    expect(next).toContain('“IMAP port” must be a number from 1 to 65535');
    const last = /name="flow_token" value="([^"]+)"/.exec(next)?.[1]!;
    rememberSecret(last, 'renewed flow token (hosted-imap.test.ts)');
    const noHost = await submit({ flow_token: last, email: 'pat@example.org', password: PASSWORD });
    expect(await noHost.text()).toContain(
      '“IMAP server” is required: example.org is not a mail domain whose servers are known here',
    );
  });

  it('refuses the token of an IMAP page at the OAuth callback (which uses it up)', async () => {
    const { token } = await openPage();
    const callback = await fetch(`${gateway().url}/v3/connect/callback?code=abc&state=${encodeURIComponent(token)}`, {
      redirect: 'manual',
    });
    expect(callback.status).toBe(400);
    expect(callback.headers.get('location')).toBeNull();
    // The flow is used up by that attempt too.
    const after = await submit({ flow_token: token, email: 'ann@example.org', password: PASSWORD });
    expect(await after.text()).toContain('This sign-in has ended.');
  });
});
