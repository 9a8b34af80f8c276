import { isIP } from 'node:net';
import type { ImapFlow } from 'imapflow';
import { env } from '#shared/config';
import { InvalidRequestError, MailDeliveryError } from '#shared/errors';
import type { ServerAddress } from '#shared/accounts/settings';
import { allowedAddresses, BlockedAddressError, classifyAddress, type UrlPolicy } from '#shared/net/addresses';

/**
 * Connections to an account's IMAP and SMTP servers. IMAP servers are outside addresses: a host is
 * resolved and checked by the same policy as webhooks (no private, link-local or metadata
 * addresses when deployed; loopback only in local mode) and the socket connects to the address that
 * passed, with the host name kept for TLS (SNI and the certificate check); in local mode only servers
 * on this machine are reached. Deployed, a connection is
 * TLS from the first byte or STARTTLS (required, with a valid certificate); plain text only to
 * loopback in local mode. imapflow and nodemailer load with the first connection (lazy chunks).
 */
const POLICY: UrlPolicy = { local: env.webhookLocalMode() };
const CONNECT_MS = 10_000;
const GREETING_MS = 10_000;
const SOCKET_MS = 60_000;

/** The address to connect to, and whether plain text may be used there. */
async function endpointOf(
  server: ServerAddress,
  role: 'IMAP' | 'SMTP',
): Promise<{ address: string; plainAllowed: boolean; servername?: string }> {
  const bare = server.host.replace(/^\[|\]$/g, '');
  // Local mode reaches mail servers on this machine only, and names no other host (not even to resolve it).
  if (
    POLICY.local &&
    !(isIP(bare) ? classifyAddress(bare) === 'loopback' : bare === 'localhost' || bare.endsWith('.localhost'))
  ) {
    throw new InvalidRequestError(
      `The ${role} server ${server.host} is refused: in local mode, mail servers must be on this machine (127.0.0.1, ::1 or localhost)`,
    );
  }
  let addresses: string[];
  try {
    addresses = await allowedAddresses(server.host, POLICY);
  } catch (error) {
    if (error instanceof BlockedAddressError)
      throw new InvalidRequestError(`The ${role} server ${server.host} is refused: ${error.message}`);
    const code = (error as NodeJS.ErrnoException).code;
    throw new InvalidRequestError(
      `The ${role} server ${server.host} could not be found (${code ?? (error as Error).message})`,
    );
  }
  const address = addresses[0]!;
  const host = server.host.replace(/^\[|\]$/g, '');
  return {
    address,
    plainAllowed: POLICY.local && classifyAddress(address) === 'loopback',
    ...(isIP(host) ? {} : { servername: host }),
  };
}

let imapflow: Promise<typeof import('#shared/lazy/imapflow')> | undefined;
let nodemailer: Promise<typeof import('#shared/lazy/nodemailer')> | undefined;

export type ImapAuth = { pass: string } | { accessToken: string };
/** An SMTP login: a password, or an OAuth access token (SASL XOAUTH2). */
export type SmtpAuth = { pass: string } | { accessToken: string };

/** A connected IMAP client (logged in); `verifyOnly` logs out again at once (credentials checked); `qresync` enables QRESYNC when offered. */
export async function openImap(
  server: ServerAddress,
  auth: ImapAuth,
  options: { verifyOnly?: boolean; qresync?: boolean } = {},
): Promise<ImapFlow> {
  const { address, plainAllowed, servername } = await endpointOf(server, 'IMAP');
  const { ImapFlow } = await (imapflow ??= import('#shared/lazy/imapflow'));
  const client = new ImapFlow({
    host: address,
    port: server.port,
    secure: server.tls === 'implicit',
    // STARTTLS is required unless plain text is allowed (loopback, local mode): then it is used when offered.
    ...(server.tls === 'starttls' && !plainAllowed ? { doSTARTTLS: true } : {}),
    ...(servername ? { servername } : {}),
    auth: { user: server.username, ...auth },
    tls: { rejectUnauthorized: true },
    logger: false,
    verifyOnly: options.verifyOnly === true,
    qresync: options.qresync === true,
    connectionTimeout: CONNECT_MS,
    greetingTimeout: GREETING_MS,
    socketTimeout: SOCKET_MS,
  });
  await client.connect();
  return client;
}

/** Checks an IMAP login; 400 saying what failed (the server refused it, could not be reached, is not IMAP). */
export async function verifyImap(server: ServerAddress, auth: ImapAuth): Promise<void> {
  try {
    await openImap(server, auth, { verifyOnly: true });
  } catch (error) {
    if (error instanceof InvalidRequestError) throw error;
    throw new InvalidRequestError(`IMAP ${server.host}:${server.port}: ${imapProblem(error, server)}`);
  }
}

function imapProblem(error: unknown, server: ServerAddress): string {
  const e = error as {
    authenticationFailed?: boolean;
    code?: string;
    serverResponseCode?: string;
    responseText?: string;
    message?: string;
    tlsFailed?: boolean;
  };
  if (e.authenticationFailed || e.serverResponseCode === 'AUTHENTICATIONFAILED') {
    return `the server refused the login of ${server.username}${e.responseText ? ` (${e.responseText})` : ''}: check the username and password (or app password)`;
  }
  if (e.tlsFailed || /STARTTLS|TLS|certificate|SSL/i.test(e.message ?? ''))
    return `no secure connection (${e.message}): the server must offer ${server.tls === 'implicit' ? 'TLS on this port' : 'STARTTLS'} with a valid certificate`;
  if (
    e.code === 'ECONNREFUSED' ||
    e.code === 'ETIMEDOUT' ||
    e.code === 'EHOSTUNREACH' ||
    e.code === 'ECONNRESET' ||
    e.code === 'CONNECT_TIMEOUT'
  )
    return `could not connect (${e.code})`;
  if (
    e.code === 'GREETING_TIMEOUT' ||
    e.code?.startsWith('ParserError') ||
    e.code === 'NoConnection' ||
    /greeting|unexpected|parse/i.test(e.message ?? '')
  ) {
    return `the server did not answer as an IMAP server (${e.message})`;
  }
  return `the connection failed (${e.code ?? e.message ?? String(error)})`;
}

/** A transport to the account's SMTP server (its address checked by the policy above), logged in as `login` says. */
async function smtpTransport(server: ServerAddress, login: SmtpAuth) {
  const { address, plainAllowed, servername } = await endpointOf(server, 'SMTP');
  const { createTransport } = await (nodemailer ??= import('#shared/lazy/nodemailer'));
  return createTransport({
    host: address,
    port: server.port,
    secure: server.tls === 'implicit',
    requireTLS: server.tls === 'starttls' && !plainAllowed,
    tls: { rejectUnauthorized: true, ...(servername ? { servername } : {}) },
    auth:
      'accessToken' in login
        ? { type: 'OAuth2' as const, user: server.username, accessToken: login.accessToken }
        : { user: server.username, pass: login.pass },
    connectionTimeout: CONNECT_MS,
    greetingTimeout: GREETING_MS,
    socketTimeout: SOCKET_MS,
  });
}

/** Checks an SMTP submission login (EHLO, STARTTLS or TLS, AUTH); 400 saying what failed. */
export async function verifySmtp(server: ServerAddress, password: string): Promise<void> {
  const transport = await smtpTransport(server, { pass: password });
  try {
    await transport.verify();
  } catch (error) {
    throw new InvalidRequestError(`SMTP ${server.host}:${server.port}: ${smtpProblem(error, server)}`);
  } finally {
    transport.close();
  }
}

/**
 * Submits a message over the account's SMTP server with its login (EHLO, STARTTLS or TLS, AUTH);
 * the server's refusal is a MailDeliveryError (502) naming why, so the caller knows nothing left.
 */
export async function submitSmtp(
  server: ServerAddress,
  login: SmtpAuth,
  raw: Buffer,
  envelope: { from: string; to: string[] },
): Promise<void> {
  const transport = await smtpTransport(server, login);
  try {
    await transport.sendMail({ envelope, raw });
  } catch (error) {
    throw new MailDeliveryError(
      `The message was not sent: SMTP ${server.host}:${server.port}: ${smtpProblem(error, server)}`,
      { cause: error },
    );
  } finally {
    transport.close();
  }
}

function smtpProblem(error: unknown, server: ServerAddress): string {
  const e = error as { code?: string; responseCode?: number; response?: string; message?: string };
  if (e.code === 'EAUTH') {
    return /not supported|no auth/i.test(e.message ?? '')
      ? `the server offers no login (AUTH) to submit mail (${e.message})`
      : `the server refused the login of ${server.username}${e.response ? ` (${e.response})` : ''}: check the SMTP username and password`;
  }
  if (e.code === 'ETLS' || /TLS|certificate|SSL/i.test(e.message ?? ''))
    return `no secure connection (${e.message}): the server must offer ${server.tls === 'implicit' ? 'TLS on this port' : 'STARTTLS'} with a valid certificate`;
  if (e.code === 'ECONNECTION' || e.code === 'ETIMEDOUT' || e.code === 'ESOCKET')
    return `could not connect (${e.message})`;
  if (e.code === 'EENVELOPE') return `the server refused the sender or recipients (${e.response ?? e.message})`;
  if (e.code === 'EMESSAGE') return `the server refused the message (${e.response ?? e.message})`;
  if (e.code === 'EPROTOCOL') return `the server did not answer as an SMTP server (${e.message})`;
  return `the connection failed (${e.code ?? e.message ?? String(error)})`;
}
