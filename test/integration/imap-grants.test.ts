import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '../support/harness';
import { useDovecot } from '../support/dovecot';
import { expectError } from '../support/expect-error';
import { rememberSecret } from '../support/secrets';

/**
 * IMAP grants (`POST /v3/connect/custom`, provider imap) against a real Dovecot (IMAP + submission)
 * started for this file: credentials are checked on both servers before a grant exists, a refusal
 * is a 400 naming what failed and stores nothing, and passwords are never answered.
 */
const { api } = useApi();
const PASSWORD = 'correct horse battery staple';
const SMTP_ONLY = 'smtp-only secret 42';
const dovecot = useDovecot([
  { user: 'ann@example.org', password: PASSWORD },
  { user: 'bob@example.org', password: PASSWORD },
  { user: 'smtp-bob@example.org', password: SMTP_ONLY },
  { user: 'cleo@example.org', password: PASSWORD },
  { user: 'dora@example.org', password: PASSWORD },
]);

/** A loopback port that accepts TCP and says something that is not IMAP or SMTP (an HTTP server's answer). */
let notMail: Server;
let notMailPort: number;
beforeAll(async () => {
  rememberSecret(PASSWORD, 'the IMAP test account password');
  rememberSecret(SMTP_ONLY, 'the IMAP test SMTP password');
  notMail = createServer((socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
  await new Promise<void>((resolve) => notMail.listen(0, '127.0.0.1', resolve));
  notMailPort = (notMail.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => notMail.close(() => resolve())));

const settings = (over: Record<string, unknown> = {}) => ({
  imap_username: 'ann@example.org',
  imap_password: PASSWORD,
  imap_host: '127.0.0.1',
  imap_port: dovecot.imapPort,
  smtp_host: '127.0.0.1',
  smtp_port: dovecot.submissionPort,
  ...over,
});

const connect = (over: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  api.post('/v3/connect/custom', { provider: 'imap', settings: settings(over), ...extra });

async function grantsOf(email: string) {
  const response = await api.get(`/v3/grants?email=${encodeURIComponent(email)}`);
  expect(response.status, response.text).toBe(200);
  return response.body.data as { id: string; provider: string; settings: Record<string, unknown> }[];
}

describe('IMAP grants', () => {
  it('connects an account whose IMAP and SMTP logins succeed, and never answers its password', async () => {
    const response = await connect();
    expect(response.status, response.text).toBe(201);
    const grant = response.body.data;
    expect(grant).toMatchObject({ provider: 'imap', grant_status: 'valid', email: 'ann@example.org' });
    expect(grant.settings).toEqual({
      imap_username: 'ann@example.org',
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      smtp_username: 'ann@example.org',
      smtp_host: '127.0.0.1',
      smtp_port: dovecot.submissionPort,
    });
    expect(response.text).not.toContain(PASSWORD);
    const read = await api.get(`/v3/grants/${grant.id}`);
    expect(read.status).toBe(200);
    expect(read.text).not.toContain(PASSWORD);

    // The same address again: its grant is re-authenticated (same ID), not duplicated.
    const again = await connect();
    expect(again.status, again.text).toBe(201);
    expect(again.body.data.id).toBe(grant.id);
    expect((await grantsOf('ann@example.org')).map((g) => g.id)).toEqual([grant.id]);
  });

  it('checks SMTP with its own credentials when they differ', async () => {
    const response = await connect({
      imap_username: 'bob@example.org',
      smtp_username: 'smtp-bob@example.org',
      smtp_password: SMTP_ONLY,
    });
    expect(response.status, response.text).toBe(201);
    expect(response.body.data.settings).toMatchObject({
      imap_username: 'bob@example.org',
      smtp_username: 'smtp-bob@example.org',
    });
    expect(response.text).not.toContain(SMTP_ONLY);
  });

  it('refuses a wrong IMAP password with a 400 naming the IMAP login, and creates no grant', async () => {
    const response = await connect({
      imap_username: 'nobody@example.org',
      imap_password: 'wrong',
      smtp_password: PASSWORD,
      smtp_username: 'ann@example.org',
    });
    expectError(
      response,
      400,
      'invalid_request_error',
      /IMAP 127\.0\.0\.1:\d+: the server refused the login of nobody@example\.org/,
    );
    expect(response.body.error.message).not.toMatch(/SMTP/);
    expect(await grantsOf('nobody@example.org')).toEqual([]);
  });

  it('refuses a wrong SMTP password with a 400 naming the SMTP login, and creates no grant', async () => {
    const response = await connect({
      imap_username: 'bob@example.org',
      smtp_username: 'smtp-bob@example.org',
      smtp_password: 'not it',
      email: 'bob2@example.org',
    });
    expectError(
      response,
      400,
      'invalid_request_error',
      /SMTP 127\.0\.0\.1:\d+: the server refused the login of smtp-bob@example\.org/,
    );
    expect(await grantsOf('bob2@example.org')).toEqual([]);
  });

  it('says when a server cannot be reached, or is not an IMAP or SMTP server', async () => {
    const closed = await connect({ imap_port: 1, email: 'closed@example.org' });
    expectError(closed, 400, 'invalid_request_error', /IMAP 127\.0\.0\.1:1: could not connect \(ECONNREFUSED\)/);
    const http = await connect({ imap_port: notMailPort, email: 'http@example.org' });
    expectError(
      http,
      400,
      'invalid_request_error',
      /IMAP 127\.0\.0\.1:\d+: the server did not answer as an IMAP server/,
    );
    const smtpHttp = await connect({ smtp_port: notMailPort, email: 'smtphttp@example.org' });
    expectError(smtpHttp, 400, 'invalid_request_error', /SMTP 127\.0\.0\.1:\d+: /);
    for (const email of ['closed@example.org', 'http@example.org', 'smtphttp@example.org'])
      expect(await grantsOf(email)).toEqual([]);
  }, 60_000);

  it('takes well-known servers from the address and refuses settings of other providers', async () => {
    const wrongProvider = await api.post('/v3/connect/custom', {
      provider: 'imap',
      settings: { ...settings(), credential_id: 'cred_1' },
    });
    expectError(
      wrongProvider,
      400,
      'invalid_request_error',
      /^'settings\.credential_id' does not apply to provider 'imap' \(its settings: imap_username, imap_password/,
    );
    const unknownDomain = await api.post('/v3/connect/custom', {
      provider: 'imap',
      settings: { imap_username: 'ann@example.org', imap_password: PASSWORD },
    });
    expectError(
      unknownDomain,
      400,
      'invalid_request_error',
      /^'settings\.imap_host' is required: example\.org is not a mail domain whose servers are known here/,
    );
  });

  it('connects the icloud and yahoo presets with an app password, on the servers their connectors name', async () => {
    // Without a connector naming other servers, the provider's own: refused in local mode, which reaches only this machine.
    const own = await api.post('/v3/connect/custom', {
      provider: 'icloud',
      settings: { username: 'ann@example.org', password: PASSWORD },
    });
    expectError(
      own,
      400,
      'invalid_request_error',
      /imap\.mail\.me\.com is refused: in local mode, mail servers must be on this machine/,
    );
    expect(await grantsOf('ann@example.org')).toHaveLength(1);

    const servers = {
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      smtp_host: '127.0.0.1',
      smtp_port: dovecot.submissionPort,
    };
    expect((await api.post('/v3/connectors', { provider: 'icloud', settings: servers })).status).toBe(201);
    const icloud = await api.post('/v3/connect/custom', {
      provider: 'icloud',
      settings: { username: 'cleo@example.org', password: PASSWORD },
    });
    expect(icloud.status, icloud.text).toBe(201);
    expect(icloud.body.data).toMatchObject({
      provider: 'icloud',
      email: 'cleo@example.org',
      settings: { imap_host: '127.0.0.1', imap_port: dovecot.imapPort, imap_username: 'cleo@example.org' },
    });
    expect(icloud.text).not.toContain(PASSWORD);
    const wrong = await api.post('/v3/connect/custom', {
      provider: 'icloud',
      settings: { username: 'cleo@example.org', password: 'not the app password' },
    });
    expectError(wrong, 400, 'invalid_request_error', /the server refused the login of cleo@example\.org/);
    const missing = await api.post('/v3/connect/custom', {
      provider: 'icloud',
      settings: { username: 'cleo@example.org' },
    });
    expectError(
      missing,
      400,
      'invalid_request_error',
      "'settings.password' (an app password of the account) is required for a icloud grant",
    );

    const yahooConnector = await api.post('/v3/connectors', {
      provider: 'yahoo',
      settings: { client_id: 'yahoo-app', client_secret: 'yahoo-secret', ...servers },
    });
    expect(yahooConnector.status, yahooConnector.text).toBe(201);
    const yahoo = await api.post('/v3/connect/custom', {
      provider: 'yahoo',
      settings: { email: 'dora@example.org', app_password: PASSWORD },
    });
    expect(yahoo.status, yahoo.text).toBe(201);
    expect(yahoo.body.data).toMatchObject({ provider: 'yahoo', email: 'dora@example.org' });
  });
});
