import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { ImapFlow, type ImapFlowOptions, type StatusQuery } from 'imapflow';
import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDovecot, type RunningDovecot } from '../../scripts/local-stack/dovecot';
import { startOidcServer, subjectFor, type LocalOidcServer } from '../../scripts/local-stack/oidc-local';
import { useDovecot } from '../support/dovecot';
import { followLogin } from '../support/oidc-login';
import { rememberSecret } from '../support/secrets';

/**
 * The IMAP provider's test server is real: Dovecot (scripts/local-stack/dovecot.ts) answers imapflow
 * with the extensions the provider relies on, keeps mail across a restart, relays submission into an
 * SMTP sink, and accepts OAuth access tokens from the local OpenID Connect server (XOAUTH2, and
 * RFC 7662 introspection as a confidential client).
 */
const USER = 'alice@example.com';
const PASSWORD = `pw-${randomBytes(8).toString('hex')}`;
const OAUTH_USER = 'oauth.user@example.com';
const CLIENT_SECRET = `dovecot-${randomBytes(12).toString('hex')}`;
const REDIRECT = 'http://127.0.0.1:9/imap-test/callback';

let oidc: LocalOidcServer;
beforeAll(async () => {
  rememberSecret(PASSWORD, 'Dovecot test password');
  rememberSecret(CLIENT_SECRET, 'OIDC client secret (Dovecot test)');
  oidc = await startOidcServer({ onIssue: ({ kind, value }) => rememberSecret(value, `provider ${kind}`) });
  oidc.addClient({ client_id: 'imap-test', client_secret: CLIENT_SECRET, redirect_uris: [REDIRECT] });
  // Dovecot's own client for introspection: it authenticates with HTTP Basic (credentials in introspection_url).
  oidc.addClient({
    client_id: 'dovecot',
    client_secret: CLIENT_SECRET,
    redirect_uris: [REDIRECT],
    token_endpoint_auth_method: 'client_secret_basic',
  });
});
afterAll(async () => {
  await oidc?.stop();
});

// Registered after the OIDC server's beforeAll, so that its URL is known when Dovecot starts.
const dovecot = useDovecot([{ user: USER, password: PASSWORD }], {
  oauth2: () => ({ introspectionUrl: `${oidc.issuers.google}/me`, usernameAttribute: 'email' }),
});

const clients: ImapFlow[] = [];
function imap(auth: ImapFlowOptions['auth'], port = dovecot.imapPort): ImapFlow {
  const client = new ImapFlow({ host: dovecot.host, port, secure: false, auth, logger: false, qresync: true });
  // A connection dropped by the server (a restart) is reported here; the tests look at the calls' results.
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}
afterAll(async () => {
  await Promise.all(clients.map((c) => (c.usable ? c.logout().catch(() => undefined) : c.close())));
});

/** An access token for `email` from provider A, through its real authorization code flow (PKCE). */
async function accessToken(email: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: 'imap-test',
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid email https://mail.google.com/',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const back = await followLogin(`${oidc.issuers.google}/auth?${query}`, {
    login: email,
    stopAt: (url) => url.href.startsWith(REDIRECT),
  });
  const code = back.searchParams.get('code');
  expect(code, back.href).toBeTruthy();
  const response = await fetch(`${oidc.issuers.google}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: code!,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      client_id: 'imap-test',
      client_secret: CLIENT_SECRET,
    }),
  });
  const body = (await response.json()) as { access_token?: string };
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body.access_token!;
}

/** One SASL exchange over a bare IMAP connection: `AUTHENTICATE <mechanism> <initial response>`; resolves with the tagged answer. */
function authenticate(mechanism: string, initialResponse: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(dovecot.imapPort, dovecot.host);
    let received = '';
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer to AUTHENTICATE ${mechanism}: ${received}`)));
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      received += chunk.toString();
      if (/^\* OK/.test(received) && !received.includes('a AUTHENTICATE')) {
        received += 'a AUTHENTICATE sent\r\n';
        socket.write(`a AUTHENTICATE ${mechanism} ${Buffer.from(initialResponse).toString('base64')}\r\n`);
      }
      // A failed XOAUTH2 first answers a JSON error challenge (`+ <base64>`), which an empty line ends.
      if (/^\+ /m.test(received) && !received.includes('(challenge answered)')) {
        received += '(challenge answered)\r\n';
        socket.write('\r\n');
      }
      const tagged = /^a (OK|NO|BAD)[^\r\n]*/m.exec(received);
      if (tagged) {
        socket.end('b LOGOUT\r\n');
        resolve(tagged[0]);
      }
    });
  });
}

/** STATUS of a mailbox (imapflow answers false when the command fails). */
async function status(client: ImapFlow, path: string, query: StatusQuery) {
  const answer = await client.status(path, query);
  if (!answer) throw new Error(`STATUS ${path} failed`);
  return answer;
}

function message(subject: string, to = USER): string {
  return [
    `From: Bob <bob@example.org>`,
    `To: ${to}`,
    `Subject: ${subject}`,
    `Message-ID: <${randomBytes(8).toString('hex')}@example.org>`,
    `Date: ${new Date().toUTCString()}`,
    '',
    `Body of ${subject}`,
    '',
  ].join('\r\n');
}

describe('Dovecot as the IMAP test server', () => {
  it('logs in with the password, advertises the extensions the provider uses, and refuses a wrong password', async () => {
    const client = imap({ user: USER, pass: PASSWORD });
    await client.connect();
    expect(client.authenticated).toBeTruthy();
    for (const capability of ['IDLE', 'CONDSTORE', 'QRESYNC', 'MOVE', 'SPECIAL-USE', 'LIST-STATUS'])
      expect(client.capabilities.has(capability), capability).toBe(true);
    expect(client.enabled.has('QRESYNC')).toBe(true);
    await client.logout();

    const wrong = imap({ user: USER, pass: `${PASSWORD}x` });
    await expect(wrong.connect()).rejects.toMatchObject({ authenticationFailed: true });
    const unknown = imap({ user: 'nobody@example.com', pass: PASSWORD });
    await expect(unknown.connect()).rejects.toMatchObject({ authenticationFailed: true });
  });

  it('appends to INBOX and fetches the message back with its UID and MODSEQ', async () => {
    const client = imap({ user: USER, pass: PASSWORD });
    await client.connect();
    const appended = await client.append('INBOX', message('First'), ['\\Seen']);
    expect(appended).toMatchObject({ destination: 'INBOX' });
    expect(appended && appended.uid).toBeGreaterThan(0);

    const mailbox = await client.mailboxOpen('INBOX');
    expect(mailbox.exists).toBe(1);
    expect(mailbox.highestModseq).toBeGreaterThan(0n);
    const fetched = await client.fetchAll(
      '1:*',
      { uid: true, envelope: true, flags: true, source: true },
      { uid: true },
    );
    expect(fetched).toHaveLength(1);
    expect(fetched[0]!.uid).toBe(appended && appended.uid);
    expect(fetched[0]!.envelope?.subject).toBe('First');
    expect(fetched[0]!.flags?.has('\\Seen')).toBe(true);
    expect(fetched[0]!.flags?.has('\\Flagged')).toBe(false);
    expect(fetched[0]!.source?.toString()).toContain('Body of First');
    const modseq = fetched[0]!.modseq!;
    expect(modseq).toBeGreaterThan(0n);

    // A flag change raises the message's MODSEQ, and CHANGEDSINCE finds just that change.
    await client.messageFlagsAdd({ uid: String(fetched[0]!.uid) }, ['\\Flagged'], { uid: true });
    const changed = await client.fetchAll('1:*', { uid: true, flags: true }, { uid: true, changedSince: modseq });
    expect(changed.map((m) => m.uid)).toEqual([fetched[0]!.uid]);
    expect(changed[0]!.modseq).toBeGreaterThan(modseq);
    expect(await client.fetchAll('1:*', { uid: true }, { uid: true, changedSince: changed[0]!.modseq! })).toEqual([]);
    await client.logout();
  });

  it('lists the special-use folders with their flags, subscribed', async () => {
    const client = imap({ user: USER, pass: PASSWORD });
    await client.connect();
    const folders = await client.list({ statusQuery: { messages: true, uidValidity: true } });
    const byPath = new Map(folders.map((f) => [f.path, f]));
    for (const [path, flag] of [
      ['Sent', '\\Sent'],
      ['Drafts', '\\Drafts'],
      ['Trash', '\\Trash'],
      ['Archive', '\\Archive'],
      ['Junk', '\\Junk'],
    ] as const) {
      const folder = byPath.get(path);
      expect(folder, path).toBeDefined();
      expect(folder!.flags.has(flag), `${path} has ${flag}`).toBe(true);
      expect(folder!.specialUseSource).toBe('extension');
      expect(folder!.subscribed).toBe(true);
      expect(folder!.status?.messages).toBe(0);
    }
    expect(byPath.get('INBOX')?.specialUse).toBe('\\Inbox');
    await client.logout();
  });

  it('relays mail submitted with AUTH PLAIN into the SMTP sink, and refuses a wrong password', async () => {
    const to = `carol-${randomBytes(4).toString('hex')}@example.net`;
    const transport = createTransport({
      host: dovecot.host,
      port: dovecot.submissionPort,
      secure: false,
      ignoreTLS: true,
      auth: { user: USER, pass: PASSWORD, method: 'PLAIN' },
    });
    const info = await transport.sendMail({
      from: USER,
      to,
      subject: 'Through submission',
      text: 'Relayed by Dovecot.',
    });
    expect(info.accepted).toEqual([to]);
    const sunk = await dovecot.sink.waitFor(to);
    expect(sunk).toHaveLength(1);
    expect(sunk[0]).toMatchObject({ mailFrom: USER, recipients: [to], subject: 'Through submission' });
    expect(await dovecot.sink.raw(sunk[0]!.id)).toContain('Relayed by Dovecot.');
    transport.close();

    const wrong = createTransport({
      host: dovecot.host,
      port: dovecot.submissionPort,
      secure: false,
      ignoreTLS: true,
      auth: { user: USER, pass: 'wrong', method: 'PLAIN' },
    });
    await expect(wrong.sendMail({ from: USER, to, subject: 'Never', text: 'x' })).rejects.toMatchObject({
      code: 'EAUTH',
    });
    wrong.close();
    expect(await dovecot.sink.messages(to)).toHaveLength(1);
  });

  it('keeps the mailbox across restart(): same UIDVALIDITY, same messages, same ports', async () => {
    const client = imap({ user: USER, pass: PASSWORD });
    await client.connect();
    const before = await status(client, 'INBOX', {
      uidValidity: true,
      messages: true,
      uidNext: true,
      highestModseq: true,
    });
    expect(before.messages).toBeGreaterThan(0);
    const port = dovecot.imapPort;
    const closed = new Promise((resolve) => client.once('close', resolve));

    await dovecot.server.restart();
    expect(dovecot.imapPort).toBe(port);
    // The old connection is gone with the old server.
    await closed;
    expect(client.usable).toBe(false);

    const again = imap({ user: USER, pass: PASSWORD });
    await again.connect();
    const after = await status(again, 'INBOX', {
      uidValidity: true,
      messages: true,
      uidNext: true,
      highestModseq: true,
    });
    expect(after).toEqual(before);
    await again.logout();
  });

  it('adds an account while running', async () => {
    const password = `pw-${randomBytes(6).toString('hex')}`;
    const client = imap({ user: 'dave@example.com', pass: password });
    await expect(client.connect()).rejects.toMatchObject({ authenticationFailed: true });
    await dovecot.server.addAccount('dave@example.com', password);
    const added = imap({ user: 'dave@example.com', pass: password });
    await added.connect();
    expect((await status(added, 'INBOX', { messages: true })).messages).toBe(0);
    await added.logout();
  });

  it('logs in with XOAUTH2 and with OAUTHBEARER (imapflow) with a token from the local OpenID Connect server (userinfo), not with a bad token or as someone else', async () => {
    const token = await accessToken(OAUTH_USER);
    const xoauth2 = (user: string, bearer: string) =>
      authenticate('XOAUTH2', `user=${user}\x01auth=Bearer ${bearer}\x01\x01`);
    expect(await xoauth2(OAUTH_USER, token)).toMatch(/^a OK/);
    expect(await xoauth2(OAUTH_USER, `${token}x`)).toMatch(/^a NO/);
    expect(await xoauth2(USER, token)).toMatch(/^a NO/);

    const client = imap({ user: OAUTH_USER, accessToken: token });
    await client.connect();
    expect(client.authenticated).toBeTruthy();
    expect((await status(client, 'INBOX', { messages: true })).messages).toBe(0);
    await client.logout();

    await expect(imap({ user: OAUTH_USER, accessToken: `${token}x` }).connect()).rejects.toMatchObject({
      authenticationFailed: true,
    });
    // The token says oauth.user: it does not open alice's mailbox.
    await expect(imap({ user: USER, accessToken: token }).connect()).rejects.toMatchObject({
      authenticationFailed: true,
    });
    // A password login does not go to the token check.
    await expect(imap({ user: OAUTH_USER, pass: token }).connect()).rejects.toMatchObject({
      authenticationFailed: true,
    });
  });

  describe('RFC 7662 introspection (introspection_mode = post, as a confidential client)', () => {
    let server: RunningDovecot;
    beforeAll(async () => {
      server = await startDovecot({
        accounts: [],
        oauth2: {
          introspectionUrl: `${oidc.issuers.google}/token/introspection`,
          mode: 'post',
          clientId: 'dovecot',
          clientSecret: CLIENT_SECRET,
          usernameAttribute: 'sub',
        },
      });
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('accepts an active token for its subject (OAUTHBEARER), and not a revoked one', async () => {
      const token = await accessToken(OAUTH_USER);
      const client = imap({ user: subjectFor(OAUTH_USER), accessToken: token }, server.imapPort);
      await client.connect();
      expect(client.authenticated).toBeTruthy();
      await client.logout();

      const revoked = await fetch(`${oidc.issuers.google}/token/revocation`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, client_id: 'imap-test', client_secret: CLIENT_SECRET }),
      });
      expect(revoked.status).toBe(200);
      await expect(
        imap({ user: subjectFor(OAUTH_USER), accessToken: token }, server.imapPort).connect(),
      ).rejects.toMatchObject({ authenticationFailed: true });
    });
  });
});
