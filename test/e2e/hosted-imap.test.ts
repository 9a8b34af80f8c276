import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { useDovecot } from '../support/dovecot';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { rememberSecret } from '../support/secrets';
import { directives, openContext as openPage, tabOrder, violations } from '../support/browser-page';

/**
 * The hosted IMAP credential page (`GET /v3/connect/auth?provider=imap`) in headless Chromium, against
 * a real Dovecot (IMAP + submission on loopback): the page as a screen reader and a keyboard meet it
 * (labels, the address prefilled from login_hint, the server settings folded away), under a strict
 * policy with no script; a wrong password shows the page again saying what failed, the fields kept
 * but not the password, and no grant; the right one ends at the application's redirect URI with a
 * code and its state, and the code (PKCE) buys a token of the new imap grant. The form's token works
 * once. Screenshots at phone and desktop widths, and of the refusal, go to test/screenshots/.
 */
const SCREENSHOTS = join(process.cwd(), 'test', 'screenshots');
const USER = 'ann@example.org';
const PASSWORD = `app password ${randomBytes(8).toString('hex')}`;
const WRONG = `not the password ${randomBytes(4).toString('hex')}`;
rememberSecret(PASSWORD, 'IMAP password typed into the credential page (hosted-imap.test.ts)');
rememberSecret(WRONG, 'wrong IMAP password typed into the credential page (hosted-imap.test.ts)');

const dovecot = useDovecot([{ user: USER, password: PASSWORD }]);

let browser: Browser;
let gateway: Gateway;
let appId: string;
let api: ApiClient;
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
        'The hosted IMAP test needs Chromium: apt-get install -y chromium (or set CHROMIUM_PATH); .ci/run installs it',
      );
    }
  }
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  mkdirSync(SCREENSHOTS, { recursive: true });

  gateway = await startGateway();
  const app = await makeApplication('hosted-imap');
  appId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  anonymous = apiClient(gateway.url);

  appServer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://app.local');
    if (url.pathname !== '/imap/done') return void res.writeHead(404).end();
    cameBack.push(url.searchParams);
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>Example app</title><h1>Back in the app</h1>');
  });
  appServer.listen(0, '127.0.0.1');
  await once(appServer, 'listening');
  appRedirect = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}/imap/done`;

  const connector = await api.post('/v3/connectors', { provider: 'imap' });
  expect(connector.status, connector.text).toBe(201);
  const registered = await api.post('/v3/applications/redirect-uris', { url: appRedirect, platform: 'web' });
  expect(registered.status, registered.text).toBe(200);
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  appServer?.closeAllConnections();
  await new Promise((resolve) => appServer?.close(resolve));
});

function authUrl(params: Record<string, string> = {}): string {
  return `${gateway.url}/v3/connect/auth?${new URLSearchParams({ client_id: appId, redirect_uri: appRedirect, response_type: 'code', provider: 'imap', ...params })}`;
}

const openContext = (viewport: { width: number; height: number }) => openPage(browser, viewport);

async function grantsOf(email: string) {
  const response = await api.get(`/v3/grants?email=${encodeURIComponent(email)}`);
  expect(response.status, response.text).toBe(200);
  return response.body.data as { id: string; provider: string }[];
}

/** Submits the form and answers the response to its POST (the page then shows what came of it). */
async function connect(page: Page) {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url() === `${gateway.url}/v3/connect/credentials` && r.request().method() === 'POST'),
    page.getByRole('button', { name: 'Connect' }).click(),
  ]);
  return response;
}

describe('hosted IMAP credential page in Chromium', () => {
  it('renders an accessible form with no script at phone and desktop widths', async () => {
    for (const [label, viewport] of [
      ['phone', { width: 390, height: 844 }],
      ['desktop', { width: 1280, height: 900 }],
    ] as const) {
      // Act
      const { context, page, requests, consoleMessages, errors } = await openContext(viewport);
      const response = await page.goto(authUrl({ state: `shot-${label}`, login_hint: USER }));

      // Assess: the page as a screen reader meets it.
      expect(response?.status()).toBe(200);
      expect(await page.title()).toBe('Connect your email account');
      expect(await page.getAttribute('html', 'lang')).toBe('en');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Connect your email account');
      const email = page.getByRole('textbox', { name: 'Email address' });
      expect(await email.inputValue()).toBe(USER);
      expect(await email.getAttribute('type')).toBe('email');
      expect(await email.getAttribute('autocomplete')).toBe('email');
      expect(await email.getAttribute('required')).not.toBeNull();
      const password = page.getByLabel('Password', { exact: true });
      expect(await password.getAttribute('type')).toBe('password');
      expect(await password.getAttribute('autocomplete')).toBe('current-password');
      expect(await password.inputValue()).toBe('');
      expect(await password.getAttribute('aria-describedby')).toBe('password-hint');
      // The server settings are folded away until asked for; then every field has its label.
      expect(await page.getByRole('textbox', { name: 'IMAP server' }).isVisible()).toBe(false);
      expect(await page.getByRole('alert').count()).toBe(0);
      expect(await tabOrder(page, 4)).toEqual([
        'input email',
        'input password',
        'summary Server settings',
        'button Connect',
      ]);
      await page.getByText('Server settings').click();
      for (const name of ['IMAP server', 'IMAP username', 'SMTP server', 'SMTP username'])
        expect(await page.getByRole('textbox', { name }).isVisible(), name).toBe(true);
      for (const name of ['IMAP port', 'SMTP port'])
        expect(await page.getByRole('spinbutton', { name }).isVisible(), name).toBe(true);
      expect(await page.getByLabel('SMTP password').getAttribute('type')).toBe('password');
      // Every input of the form, hidden ones aside, is named by a label.
      const unlabelled = await page
        .locator('input:not([type=hidden])')
        .evaluateAll((inputs) =>
          inputs
            .filter((i) => (i as unknown as { labels: ArrayLike<unknown> | null }).labels?.length !== 1)
            .map((i) => i.id),
        );
      expect(unlabelled).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOTS, `hosted-imap-${label}.png`), fullPage: true });

      // Assess: a strict policy, no script, the nonce'd style applied, nothing from elsewhere.
      const csp = directives(response!.headers()['content-security-policy'] ?? '');
      expect(csp.get('default-src')).toEqual(["'none'"]);
      const html = await response!.text();
      const nonce = /<style nonce="([^"]+)">/.exec(html)?.[1];
      expect(csp.get('style-src')).toEqual([`'nonce-${nonce}'`]);
      expect(csp.get('script-src')).toEqual([expect.stringMatching(/^'nonce-[A-Za-z0-9+/=]+'$/)]);
      expect(await page.locator('script').count()).toBe(0);
      // No inline style attribute in what we served (Chromium's autofill adds empty ones to inputs at run time).
      expect(html).not.toMatch(/\sstyle=/);
      // The form ends with a redirect to the application: its origin is the only other form-action.
      expect(csp.get('form-action')).toEqual(["'self'", new URL(appRedirect).origin]);
      expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
      expect(
        await page.locator('main').evaluate((main) => main.ownerDocument.defaultView!.getComputedStyle(main).maxWidth),
      ).toBe('448px');
      expect(requests.filter((url) => new URL(url).origin !== gateway.url)).toEqual([]);
      expect({ violations: violations(consoleMessages), errors }).toEqual({ violations: [], errors: [] });
      await context.close();
    }
  }, 60_000);

  it('refuses a wrong password on the page, then connects with the right one and ends at the redirect URI with a code that exchanges for the imap grant', async () => {
    // Prepare: a state that only survives if nothing decodes, re-encodes or trims it; PKCE, as a browser app would.
    const state = `imap state: ü & = / ? + ${Date.now()}`;
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const { context, page, requests, consoleMessages, errors } = await openContext({ width: 1280, height: 900 });
    await page.goto(authUrl({ state, login_hint: USER, code_challenge: challenge, code_challenge_method: 'S256' }));
    await page.getByLabel('Password', { exact: true }).fill(WRONG);
    await page.getByText('Server settings').click();
    await page.getByRole('textbox', { name: 'IMAP server' }).fill('127.0.0.1');
    await page.getByRole('spinbutton', { name: 'IMAP port' }).fill(String(dovecot.imapPort));
    await page.getByRole('textbox', { name: 'SMTP server' }).fill('127.0.0.1');
    await page.getByRole('spinbutton', { name: 'SMTP port' }).fill(String(dovecot.submissionPort));

    // Act 1: the wrong password.
    const refused = await connect(page);

    // Assess 1: the page again (400), naming the login that failed, the fields kept but not the password; no grant.
    expect(refused.status()).toBe(400);
    expect(await refused.headerValue('content-type')).toBe('text/html; charset=utf-8');
    const alert = page.getByRole('alert');
    expect(await alert.textContent()).toMatch(
      new RegExp(
        `^We could not connect this account\\.IMAP 127\\.0\\.0\\.1:${dovecot.imapPort}: the server refused the login of ann@example\\.org`,
      ),
    );
    expect(await page.getByRole('textbox', { name: 'Email address' }).inputValue()).toBe(USER);
    expect(await page.getByLabel('Password', { exact: true }).inputValue()).toBe('');
    // The server settings stay open and filled: they were typed there.
    expect(await page.getByRole('textbox', { name: 'IMAP server' }).inputValue()).toBe('127.0.0.1');
    expect(await page.getByRole('spinbutton', { name: 'SMTP port' }).inputValue()).toBe(String(dovecot.submissionPort));
    expect(await page.content()).not.toContain(WRONG);
    await page.screenshot({ path: join(SCREENSHOTS, 'hosted-imap-refused-desktop.png'), fullPage: true });
    expect(await grantsOf(USER)).toEqual([]);

    // Act 2: the right password, in the page as it came back.
    const token = await page.locator('input[name=flow_token]').inputValue();
    rememberSecret(token, 'flow token of the IMAP credential page (hosted-imap.test.ts)');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    const accepted = await connect(page);
    await page.waitForURL((url) => url.href.startsWith(appRedirect));

    // Assess 2: back at the application with a code and the state as it was sent.
    expect([302, 303]).toContain(accepted.status());
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Back in the app');
    const back = cameBack.at(-1)!;
    expect(back.get('error')).toBeNull();
    expect(back.get('state')).toBe(state);
    const code = back.get('code')!;
    rememberSecret(code, 'authorization code at the application redirect URI (hosted-imap.test.ts)');
    expect(code).toMatch(/^sbac_/);
    const origins = new Set(requests.map((url) => new URL(url).origin));
    expect([...origins].filter((origin) => ![gateway.url, new URL(appRedirect).origin].includes(origin))).toEqual([]);
    expect({ violations: violations(consoleMessages), errors }).toEqual({ violations: [], errors: [] });
    await context.close();

    // Act 3: the application exchanges the code with its PKCE verifier (no API key), and calls as the grant.
    const exchanged = await anonymous.post('/v3/connect/token', {
      grant_type: 'authorization_code',
      client_id: appId,
      code,
      redirect_uri: appRedirect,
      code_verifier: verifier,
    });
    expect(exchanged.status, exchanged.text).toBe(200);
    expect(exchanged.body).toMatchObject({ token_type: 'Bearer', provider: 'imap', email: USER });
    const me = await apiClient(gateway.url, exchanged.body.access_token).get('/v3/grants/me');

    // Assess 3: the imap grant, its servers kept, no password anywhere it answers.
    expect(me.status, me.text).toBe(200);
    expect(me.body.data).toMatchObject({
      id: exchanged.body.grant_id,
      provider: 'imap',
      email: USER,
      grant_status: 'valid',
    });
    expect(me.body.data.settings).toMatchObject({
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      smtp_host: '127.0.0.1',
      smtp_port: dovecot.submissionPort,
      imap_username: USER,
    });
    expect(me.text).not.toContain(PASSWORD);
    expect((await grantsOf(USER)).map((g) => g.id)).toEqual([exchanged.body.grant_id]);

    // The form's token was for one submission: sent again, it is refused and nothing is issued.
    const replay = await fetch(`${gateway.url}/v3/connect/credentials`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        flow_token: token,
        email: USER,
        password: PASSWORD,
        imap_host: '127.0.0.1',
        imap_port: String(dovecot.imapPort),
        smtp_host: '127.0.0.1',
        smtp_port: String(dovecot.submissionPort),
      }).toString(),
    });
    expect(replay.status).toBe(400);
    expect(replay.headers.get('location')).toBeNull();
    expect(await replay.text()).toContain('This sign-in has ended.');
  }, 60_000);

  it('refuses a form whose token is unknown, in the browser too', async () => {
    const { context, page } = await openContext({ width: 390, height: 844 });
    await page.goto(authUrl({ state: 'forged', login_hint: USER }));
    await page.locator('input[name=flow_token]').evaluate((el) => el.setAttribute('value', 'forged-token'));
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    const response = await connect(page);
    expect(response.status()).toBe(400);
    expect(await page.getByRole('alert').textContent()).toContain('This sign-in has ended.');
    expect(cameBack.filter((q) => q.get('state') === 'forged')).toEqual([]);
    await context.close();
  });
});
