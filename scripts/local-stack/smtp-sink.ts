import { buffer } from 'node:stream/consumers';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerError, type SMTPServerSession } from 'smtp-server';
import { listen, type RunningService } from './service';

/**
 * The stand-in for an outside mail relay: an SMTP server that accepts every message (and any
 * credentials) and keeps it in memory, plus a small HTTP API so tests in other processes can read
 * what was relayed:
 *
 *   GET    /messages[?to=<address>]  summaries, oldest first (recipient match is case-insensitive)
 *   GET    /messages/<id>/raw        the raw MIME bytes (message/rfc822)
 *   DELETE /messages                 forget everything
 */
export interface SunkMessage {
  id: string;
  mailFrom: string;
  recipients: string[];
  /** Base64 of the exact bytes received, so 8-bit and non-UTF-8 content survives. */
  raw: string;
  receivedAt: string;
  /** Decoded Subject header, parsed once on arrival; null when there is none. */
  subject: string | null;
  size: number;
}

const MAX_MESSAGES = 1000;
const MAX_BYTES = 30 * 1024 * 1024;

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function smtpError(responseCode: number, message: string): SMTPServerError {
  return Object.assign(new Error(message), { responseCode });
}

/** Only the header block is parsed: enough for the (RFC 2047-decoded) subject, cheap on large mail. */
async function parseSubject(raw: Buffer): Promise<string | null> {
  let end = raw.indexOf('\r\n\r\n');
  if (end < 0) end = raw.indexOf('\n\n');
  try {
    // Loaded for the first message: ~0.2 s that the local stack's start does without.
    const { simpleParser } = await import('mailparser');
    const parsed = await simpleParser(end < 0 ? raw : raw.subarray(0, end + 2), {
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipImageLinks: true,
    });
    return parsed.subject ?? null;
  } catch {
    return null;
  }
}

export async function startSmtpSink(options: {
  smtpPort: number;
  httpPort: number;
  host?: string;
}): Promise<RunningService & { smtpUrl: string; httpUrl: string }> {
  const host = options.host ?? '127.0.0.1';
  let messages: SunkMessage[] = [];

  async function store(raw: Buffer, session: SMTPServerSession): Promise<void> {
    const { mailFrom, rcptTo } = session.envelope;
    messages.push({
      id: randomUUID(),
      mailFrom: mailFrom === false ? '' : mailFrom.address,
      recipients: rcptTo.map((r) => r.address),
      raw: raw.toString('base64'),
      receivedAt: new Date().toISOString(),
      subject: await parseSubject(raw),
      size: raw.length,
    });
    if (messages.length > MAX_MESSAGES) messages = messages.slice(-MAX_MESSAGES);
  }

  /** Resolves to the error to answer with, or undefined once the message is kept. */
  async function receive(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
  ): Promise<SMTPServerError | undefined> {
    const raw = await buffer(stream);
    if (stream.sizeExceeded) return smtpError(552, `5.3.4 message exceeds the ${MAX_BYTES} byte limit`);
    await store(raw, session);
    return undefined;
  }

  const smtp = new SMTPServer({
    logger: false,
    authOptional: true,
    // A relay usually wants credentials: take any over plain text, since this is loopback only.
    allowInsecureAuth: true,
    onAuth: (auth, _session, callback) => callback(null, { user: auth.username ?? 'anonymous' }),
    disabledCommands: ['STARTTLS'],
    // The default reverse lookup would query DNS for the client address.
    disableReverseLookup: true,
    size: MAX_BYTES,
    closeTimeout: 1_000,
    banner: 'Switchboard local SMTP sink',
    onData(stream, session, callback) {
      receive(stream, session).then(
        (err) => callback(err ?? null),
        () => callback(smtpError(451, '4.3.0 temporary failure, try again later')),
      );
    },
  });
  // Client errors (resets, timeouts) are emitted here; without a listener they would crash the process.
  smtp.on('error', () => undefined);

  const http = createServer((req, res) => {
    try {
      route(req, res);
    } catch {
      sendJson(res, 500, { error: 'internal error' });
    }
  });

  function sendJson(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  function route(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://sink');
    if (url.pathname === '/messages') {
      if (req.method === 'GET') {
        const to = url.searchParams.get('to')?.toLowerCase();
        const selected = to ? messages.filter((m) => m.recipients.some((r) => r.toLowerCase() === to)) : messages;
        return sendJson(
          res,
          200,
          selected.map(({ id, mailFrom, recipients, receivedAt, subject, size }) => ({
            id,
            mailFrom,
            recipients,
            receivedAt,
            subject,
            size,
          })),
        );
      }
      if (req.method === 'DELETE') {
        messages = [];
        return sendJson(res, 200, { deleted: true });
      }
      return sendJson(res, 405, { error: 'method not allowed' });
    }
    const raw = /^\/messages\/([^/]+)\/raw$/.exec(url.pathname);
    if (raw && req.method === 'GET') {
      const id = decodeURIComponent(raw[1] ?? '');
      const message = messages.find((m) => m.id === id);
      if (!message) return sendJson(res, 404, { error: 'no such message' });
      const bytes = Buffer.from(message.raw, 'base64');
      res.writeHead(200, { 'content-type': 'message/rfc822', 'content-length': bytes.length }).end(bytes);
      return;
    }
    sendJson(res, 404, { error: 'not found' });
  }

  const smtpPort = await listen(smtp.server, options.smtpPort, host);
  let httpPort: number;
  try {
    httpPort = await listen(http, options.httpPort, host);
  } catch (err) {
    await new Promise<void>((resolve) => smtp.close(resolve));
    throw err;
  }
  const httpUrl = `http://${urlHost(host)}:${httpPort}`;
  return {
    endpoint: httpUrl,
    smtpUrl: `smtp://${urlHost(host)}:${smtpPort}`,
    httpUrl,
    stop: async () => {
      await Promise.all([
        new Promise<void>((resolve) => smtp.close(resolve)),
        new Promise<void>((resolve) => {
          http.closeAllConnections();
          http.close(() => resolve());
        }),
      ]);
    },
  };
}
