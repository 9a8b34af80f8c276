import { buffer } from 'node:stream/consumers';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerError, type SMTPServerSession } from 'smtp-server';
import { listen, type RunningService } from './service';

/**
 * The local inbound MX for Agent Accounts. On AWS, SES receives mail for the deployment's domains;
 * locally this plain SMTP server on loopback does. It knows nothing of the project: the caller
 * decides which recipients exist and how a message is stored.
 *
 * It behaves like a careful MX: unknown recipients are refused at RCPT TO (550), and a message is
 * acknowledged only after `deliver` has stored it. Any failure of the callbacks is answered with
 * 451 so the sending server keeps the message and retries; nothing is lost and nothing crashes.
 */
export interface InboundHandlers {
  /**
   * Whether an address is an Agent Account of this deployment (unknown recipients are refused at
   * RCPT TO with 550 5.1.1), or the reason mail from `mailFrom` to it is refused (550 5.7.1).
   */
  acceptsRecipient(address: string, mailFrom?: string): Promise<boolean | string | { code: number; message: string }>;
  /** Stores the message for the accepted recipients; resolves only once it is stored. */
  deliver(raw: Buffer, envelope: { mailFrom: string; recipients: string[] }): Promise<void>;
}

/** The SES receiving limit is 40 MB; 26 MB matches what common senders accept. */
const DEFAULT_MAX_BYTES = 26 * 1024 * 1024;

function smtpError(responseCode: number, message: string): SMTPServerError {
  return Object.assign(new Error(message), { responseCode });
}

const tryLater = () => smtpError(451, '4.3.0 temporary failure, try again later');

export async function startInboundSmtp(options: {
  port: number;
  host?: string;
  maxBytes?: number;
  handlers: InboundHandlers;
}): Promise<RunningService & { port: number }> {
  const host = options.host ?? '127.0.0.1';
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const { handlers } = options;

  async function checkRecipient(address: string, mailFrom: string | undefined): Promise<SMTPServerError | undefined> {
    let known: boolean | string | { code: number; message: string };
    try {
      known = await handlers.acceptsRecipient(address, mailFrom);
    } catch {
      return tryLater();
    }
    if (typeof known === 'string') return smtpError(550, `5.7.1 ${known}`);
    if (typeof known === 'object') return smtpError(known.code, known.message);
    return known ? undefined : smtpError(550, `5.1.1 <${address}>: no such Agent Account`);
  }

  async function receive(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
  ): Promise<SMTPServerError | undefined> {
    // The stream must be drained even when the message is refused, or the session stalls.
    const raw = await buffer(stream);
    if (stream.sizeExceeded) return smtpError(552, `5.3.4 message exceeds the ${maxBytes} byte limit`);
    const { mailFrom, rcptTo } = session.envelope;
    // One delivery for the whole transaction. smtp-server already keeps a recipient named twice
    // once (compared case-insensitively; the later spelling wins).
    const recipients = rcptTo.map((r) => r.address);
    try {
      await handlers.deliver(raw, { mailFrom: mailFrom === false ? '' : mailFrom.address, recipients });
    } catch (error) {
      // A refusal the handler states itself (e.g. a recipient's policy) is answered as such.
      const code = (error as { responseCode?: unknown }).responseCode;
      if (typeof code === 'number' && code >= 400 && code < 600) return smtpError(code, (error as Error).message);
      return tryLater();
    }
    return undefined;
  }

  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    // Local only, plain text: no TLS certificate to manage.
    disabledCommands: ['STARTTLS'],
    // The default reverse lookup would query DNS for the client address.
    disableReverseLookup: true,
    size: maxBytes,
    banner: 'Switchboard local inbound MX',
    // Give an in-flight delivery time to finish on stop(), then cut the connection.
    closeTimeout: 5_000,
    onRcptTo(address, session, callback) {
      const mailFrom = session.envelope.mailFrom === false ? undefined : session.envelope.mailFrom.address;
      checkRecipient(address.address, mailFrom || undefined).then(
        (err) => callback(err ?? null),
        () => callback(tryLater()),
      );
    },
    onData(stream, session, callback) {
      receive(stream, session).then(
        (err) => callback(err ?? null),
        () => callback(tryLater()),
      );
    },
  });
  // Client errors (resets, timeouts) are emitted here; without a listener they would crash the process.
  server.on('error', () => undefined);

  const port = await listen(server.server, options.port, host);
  return {
    endpoint: `smtp://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    stop: () => new Promise<void>((resolve) => server.close(resolve)),
  };
}
