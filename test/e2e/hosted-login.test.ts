import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOidcServer, type LocalOidcServer } from '../../scripts/local-stack/oidc-local';
import { apiClient, type ApiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { rememberSecret } from '../support/secrets';
import { directives, openContext as openPage, tabOrder, violations } from '../support/browser-page';

/**
 * The hosted login page (`GET /v3/connect/auth` without a provider) in headless Chromium (the Debian
 * `chromium` package driven by playwright-core), against the local OpenID Connect server playing
 * provider A (google) and provider B (microsoft): the page lists the application's providers (roles,
 * names, keyboard order), a click on Microsoft leads through the provider's login and consent back to
 * the application's redirect URI with a code and its state intact; the code buys an access token that
 * opens the new microsoft grant. Then provider detection from the address (`prompt=detect`). The page
 * runs no script, carries its style under a nonce, and loads nothing from another origin. Screenshots
 * at phone and desktop widths (and of the detection form at phone width) go to test/screenshots/.
 */
const SCREENSHOTS = join(process.cwd(), 'test', 'screenshots');
const OIDC_CLIENT = 'sb-hosted-login';
const clientSecret = `hosted-login-secret-${randomBytes(12).toString('hex')}`;
rememberSecret(clientSecret, 'client_secret of the local OpenID Connect client (hosted-login.test.ts)');

let browser: Browser;
let gateway: Gateway;
let oidc: LocalOidcServer;
let appId: string;
let apiKey: string;
let anonymous: ApiClient;
/** The application's redirect URI: a page that keeps every query it is sent. */
let appServer: Server;
let appRedirect: string;
const cameBack: URLSearchParams[] = [];

beforeAll(async () => {
  let executablePath = process.env.CHROMIUM_PATH;
  if (!executablePath) {
    try {
      executablePath = execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
    } catch {
      throw new Error(
        'The hosted login test needs Chromium: apt-get install -y chromium (or set CHROMIUM_PATH); .ci/run installs it',
      );
    }
  }
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  mkdirSync(SCREENSHOTS, { recursive: true });

  gateway = await startGateway();
  ({ applicationId: appId, apiKey } = await makeApplication('hosted-login'));
  const api = apiClient(gateway.url, apiKey);
  anonymous = apiClient(gateway.url);

  appServer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://app.local');
    if (url.pathname !== '/oauth/done') return void res.writeHead(404).end();
    cameBack.push(url.searchParams);
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>Example app</title><h1>Back in the app</h1>');
  });
  appServer.listen(0, '127.0.0.1');
  await once(appServer, 'listening');
  appRedirect = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}/oauth/done`;

  oidc = await startOidcServer({
    clients: [
      { client_id: OIDC_CLIENT, client_secret: clientSecret, redirect_uris: [`${gateway.url}/v3/connect/callback`] },
    ],
    onIssue: ({ issuer, kind, value }) =>
      rememberSecret(value, `${kind} issued by the local ${issuer} issuer (hosted-login.test.ts)`),
  });
  for (const provider of ['google', 'microsoft'] as const) {
    const created = await api.post('/v3/connectors', {
      provider,
      settings: { client_id: OIDC_CLIENT, client_secret: clientSecret, issuer: oidc.issuers[provider] },
    });
    expect(created.status, created.text).toBe(201);
  }
  const registered = await api.post('/v3/applications/redirect-uris', { url: appRedirect, platform: 'web' });
  expect(registered.status, registered.text).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await oidc?.stop();
  await gateway?.close();
  appServer?.closeAllConnections();
  await new Promise((resolve) => appServer?.close(resolve));
});

function authUrl(params: Record<string, string> = {}): string {
  return `${gateway.url}/v3/connect/auth?${new URLSearchParams({ client_id: appId, redirect_uri: appRedirect, response_type: 'code', ...params })}`;
}

const openContext = (viewport: { width: number; height: number }) => openPage(browser, viewport);

describe('hosted login page in Chromium', () => {
  it('lists the providers, and Microsoft leads through sign-in and consent back to the application, whose code opens the microsoft grant', async () => {
    for (const [label, viewport] of [
      ['phone', { width: 390, height: 844 }],
      ['desktop', { width: 1280, height: 900 }],
    ] as const) {
      const { context, page, requests, consoleMessages, errors } = await openContext(viewport);
      const response = await page.goto(authUrl({ state: `shot-${label}` }));
      expect(response?.status()).toBe(200);
      await page.getByRole('link', { name: 'Sign in with Microsoft' }).waitFor();
      await page.screenshot({ path: join(SCREENSHOTS, `hosted-login-${label}.png`), fullPage: true });
      expect(requests.filter((url) => new URL(url).origin !== gateway.url)).toEqual([]);
      expect({ violations: violations(consoleMessages), errors }).toEqual({ violations: [], errors: [] });
      await context.close();
    }

    // Prepare: a state that only survives if nothing decodes, re-encodes or trims it on the way.
    const state = `app state: ü & = / ? + ${Date.now()}`;
    const { context, page, requests, consoleMessages, errors } = await openContext({ width: 1280, height: 900 });

    // Act 1: the page.
    const response = await page.goto(authUrl({ state }));

    // Assess 1: the providers as a screen reader and a keyboard meet them; a strict policy, no script.
    expect(response?.status()).toBe(200);
    expect(await page.title()).toBe('Connect your account');
    expect(await page.getAttribute('html', 'lang')).toBe('en');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Connect your account');
    const list = page.getByRole('list', { name: 'Providers' });
    expect(await list.getByRole('listitem').allTextContents()).toEqual([
      'Sign in with Google',
      'Sign in with Microsoft',
    ]);
    expect(await list.getByRole('link').count()).toBe(2);
    expect(await page.getByRole('textbox').count()).toBe(0);
    expect(await tabOrder(page, 2)).toEqual(['a Sign in with Google', 'a Sign in with Microsoft']);
    const microsoftHref = new URL(
      (await page.getByRole('link', { name: 'Sign in with Microsoft' }).getAttribute('href'))!,
      gateway.url,
    );
    expect(microsoftHref.searchParams.get('provider')).toBe('microsoft');
    expect(microsoftHref.searchParams.get('state')).toBe(state);

    const csp = directives(response!.headers()['content-security-policy'] ?? '');
    expect(csp.get('default-src')).toEqual(["'none'"]);
    const html = await response!.text();
    const nonce = /<style nonce="([^"]+)">/.exec(html)?.[1];
    expect(nonce).toEqual(expect.any(String));
    expect(csp.get('style-src')).toEqual([`'nonce-${nonce}'`]);
    // No inline script could run: script-src is a nonce alone (no 'unsafe-inline', no host), and the page has none.
    expect(csp.get('script-src')).toEqual([expect.stringMatching(/^'nonce-[A-Za-z0-9+/=]+'$/)]);
    expect(await page.locator('script').count()).toBe(0);
    expect(await page.locator('[style]').count()).toBe(0);
    expect(csp.get('form-action')).toEqual(["'self'"]);
    expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
    // The nonce'd style applies (28rem wide at most): the policy lets it in.
    expect(
      await page.locator('main').evaluate((main) => main.ownerDocument.defaultView!.getComputedStyle(main).maxWidth),
    ).toBe('448px');
    expect(requests.filter((url) => new URL(url).origin !== gateway.url)).toEqual([]);

    // Act 2: Microsoft, its login form, its consent page.
    await page.getByRole('link', { name: 'Sign in with Microsoft' }).click();
    await page.waitForURL((url) => url.href.startsWith(`${oidc.issuers.microsoft}/interaction/`));
    await page.getByPlaceholder('Email address').fill('ann.lee@outlook.com');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Allow access?' }).waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(appRedirect));

    // Assess 2: back at the application with a code and the state as it was sent.
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Back in the app');
    const back = cameBack.at(-1)!;
    expect(back.get('error')).toBeNull();
    expect(back.get('state')).toBe(state);
    const code = back.get('code')!;
    rememberSecret(code, 'authorization code at the application redirect URI (hosted-login.test.ts)');
    expect(code).toMatch(/^sbac_/);
    // Every request of the flow stayed on the loopback servers of this test.
    const origins = new Set(requests.map((url) => new URL(url).origin));
    expect(
      [...origins].filter((origin) => ![gateway.url, oidc.origin, new URL(appRedirect).origin].includes(origin)),
    ).toEqual([]);
    expect(origins).toContain(oidc.origin);
    expect({ violations: violations(consoleMessages), errors }).toEqual({ violations: [], errors: [] });
    await context.close();

    // Act 3: the application exchanges the code with its API key, and calls as the new grant.
    const token = await anonymous.post('/v3/connect/token', {
      grant_type: 'authorization_code',
      client_id: appId,
      client_secret: apiKey,
      code,
      redirect_uri: appRedirect,
    });
    expect(token.status, token.text).toBe(200);
    expect(token.body).toMatchObject({ token_type: 'Bearer', provider: 'microsoft', email: 'ann.lee@outlook.com' });
    expect(token.body.access_token).toMatch(/^sbat_/);
    const me = await apiClient(gateway.url, token.body.access_token).get('/v3/grants/me');

    // Assess 3
    expect(me.status, me.text).toBe(200);
    expect(me.body.data).toMatchObject({
      id: token.body.grant_id,
      provider: 'microsoft',
      email: 'ann.lee@outlook.com',
      grant_status: 'valid',
    });
    // The code was for one exchange only.
    const again = await anonymous.post('/v3/connect/token', {
      grant_type: 'authorization_code',
      client_id: appId,
      client_secret: apiKey,
      code,
      redirect_uri: appRedirect,
    });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
  }, 60_000);

  it('goes straight to the provider of a known address (prompt=detect with login_hint)', async () => {
    const { context, page } = await openContext({ width: 1280, height: 900 });
    await page.goto(authUrl({ prompt: 'detect', login_hint: 'someone@gmail.com', state: 'detect-hint' }));
    await page.waitForURL((url) => url.href.startsWith(`${oidc.issuers.google}/interaction/`));
    expect(await page.getByPlaceholder('Email address').inputValue()).toBe('someone@gmail.com');
    await context.close();
  });

  it('asks for the address first (prompt=detect,select_provider), and lists the providers when the domain says nothing', async () => {
    // Prepare
    const { context, page, requests, consoleMessages, errors } = await openContext({ width: 390, height: 844 });
    const response = await page.goto(authUrl({ prompt: 'detect,select_provider', state: 'detect-form' }));
    expect(response?.status()).toBe(200);
    const email = page.getByRole('textbox', { name: 'Your email address' });
    expect(await email.getAttribute('type')).toBe('email');
    expect(await email.getAttribute('autocomplete')).toBe('email');
    expect(await page.getByRole('status').count()).toBe(0);
    expect(await page.getByRole('list', { name: 'Providers' }).getByRole('link').allTextContents()).toEqual([
      'Sign in with Google',
      'Sign in with Microsoft',
    ]);
    // The address comes first for the keyboard too.
    expect(await tabOrder(page, 4)).toEqual([
      'input email',
      'button Continue',
      'a Sign in with Google',
      'a Sign in with Microsoft',
    ]);

    // Act: an address of a domain no provider is known for, sent with Enter.
    await email.fill('pat@unknown-domain.example');
    await email.press('Enter');
    await page.waitForURL((url) => url.searchParams.get('login_hint') === 'pat@unknown-domain.example');

    // Assess: still our page, saying why, with the list to choose from and the address kept.
    expect(new URL(page.url()).origin).toBe(gateway.url);
    expect(await page.getByRole('status').textContent()).toBe(
      'We could not tell the provider of this address: choose it below.',
    );
    expect(await page.getByRole('list', { name: 'Providers' }).getByRole('link').allTextContents()).toEqual([
      'Sign in with Google',
      'Sign in with Microsoft',
    ]);
    expect(await page.getByRole('textbox', { name: 'Your email address' }).inputValue()).toBe(
      'pat@unknown-domain.example',
    );
    await page.screenshot({ path: join(SCREENSHOTS, 'hosted-login-detect-phone.png'), fullPage: true });
    const google = new URL(
      (await page.getByRole('link', { name: 'Sign in with Google' }).getAttribute('href'))!,
      gateway.url,
    );
    expect(Object.fromEntries(google.searchParams)).toMatchObject({
      provider: 'google',
      state: 'detect-form',
      client_id: appId,
      redirect_uri: appRedirect,
    });
    expect(requests.filter((url) => new URL(url).origin !== gateway.url)).toEqual([]);
    expect({ violations: violations(consoleMessages), errors }).toEqual({ violations: [], errors: [] });
    await context.close();
  });

  // The form's answer is a redirect to the provider, which Chromium checks against the page's
  // form-action: the page names the providers' sign-in origins there.
  it('goes on to the provider of an address typed into the form', async () => {
    const { context, page, consoleMessages } = await openContext({ width: 1280, height: 900 });
    try {
      await page.goto(authUrl({ prompt: 'detect,select_provider', state: 'detect-typed' }));
      await page.getByRole('textbox', { name: 'Your email address' }).fill('someone@gmail.com');
      await page.getByRole('button', { name: 'Continue' }).click();
      await expect
        .poll(
          () => page.url().startsWith(`${oidc.issuers.google}/interaction/`) || violations(consoleMessages).length > 0,
          { timeout: 15_000 },
        )
        .toBe(true);
      expect(violations(consoleMessages)).toEqual([]);
      expect(page.url()).toContain(`${oidc.issuers.google}/interaction/`);
      expect(await page.getByPlaceholder('Email address').inputValue()).toBe('someone@gmail.com');
    } finally {
      await context.close();
    }
  });
});
