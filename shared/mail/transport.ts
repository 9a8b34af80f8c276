import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import type { Transporter } from 'nodemailer';
import { requestHandler } from '#shared/aws/http';
import { env } from '#shared/config';
import { traced } from '#shared/aws/tracing';

/**
 * Delivery of raw MIME to addresses outside this deployment. `MAIL_TRANSPORT=smtp` relays over SMTP
 * to SMTP_RELAY_URL (any relay: a provider's submission server, Postfix, or the local sink that
 * `npm start` runs); `MAIL_TRANSPORT=ses` sends through Amazon SES v2. Same interface either way.
 */
export interface Envelope {
  from: string;
  to: string[];
}

export interface MailTransport {
  send(raw: Buffer, envelope: Envelope): Promise<{ response?: string }>;
}

/** The relay refused or could not be reached; nothing was sent. */
export class DeliveryError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'DeliveryError';
  }
}

/** nodemailer (its SMTP client and all it brings) loads with the first message relayed over SMTP, not at cold start (a lazy chunk: scripts/esbuild-plugins.cjs). */
let nodemailer: Promise<typeof import('#shared/lazy/nodemailer')> | undefined;

function smtpTransport(url: string): MailTransport {
  let transport: Transporter | undefined;
  return {
    async send(raw, envelope) {
      transport ??= (await (nodemailer ??= import('#shared/lazy/nodemailer'))).createTransport(url);
      try {
        const info = (await transport.sendMail({
          envelope: { from: envelope.from, to: envelope.to },
          raw,
        })) as unknown as {
          rejected: unknown[];
          response?: string;
        };
        if (info.rejected.length) throw new DeliveryError(`The relay rejected ${info.rejected.map(String).join(', ')}`);
        return { response: info.response };
      } catch (error) {
        if (error instanceof DeliveryError) throw error;
        const e = error as { code?: string; responseCode?: number; response?: string; message?: string };
        throw new DeliveryError(e.response ?? `${e.code ?? 'error'}: ${e.message ?? 'relay unavailable'}`, {
          cause: error,
        });
      }
    },
  };
}

function sesTransport(): MailTransport {
  const ses = traced(new SESv2Client({ requestHandler }));
  return {
    async send(raw, envelope) {
      try {
        const result = await ses.send(
          new SendEmailCommand({
            FromEmailAddress: envelope.from,
            Destination: { ToAddresses: envelope.to },
            Content: { Raw: { Data: raw } },
          }),
        );
        return { response: result.MessageId };
      } catch (error) {
        throw new DeliveryError(`Amazon SES refused the message: ${(error as Error).message}`, { cause: error });
      }
    },
  };
}

// Read at cold start: a function missing SMTP_RELAY_URL fails to start rather than on a send.
const TRANSPORT = env.mailTransport();
const RELAY_URL = TRANSPORT === 'smtp' ? env.smtpRelayUrl() : undefined;
let transport: MailTransport | undefined;

export function mailTransport(): MailTransport {
  transport ??= TRANSPORT === 'ses' ? sesTransport() : smtpTransport(RELAY_URL!);
  return transport;
}
