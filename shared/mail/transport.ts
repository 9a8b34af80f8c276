import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import type { Transporter } from 'nodemailer';
import { requestHandler } from '#shared/aws/http';
import { env } from '#shared/config';
import { SES_TAG_NAMES } from '#shared/deliverability/tags';
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

/**
 * Who sent a message, for the deliverability events of the transport (shared/deliverability/): our
 * IDs only, never addresses or content. With SES they travel as the message's tags and come back in
 * its events; `grant` is `transactional` for a transactional send.
 */
export interface SendTags {
  application: string;
  grant: string;
  message: string;
}

/** A recipient the relay refused while accepting the message for others, with its SMTP answer. */
export interface RefusedRecipient {
  address: string;
  reason: string;
}

/**
 * The transport's answer: the recipients it took the message for, and those it refused (the SMTP
 * relay only: SES takes every recipient and reports later, through its events).
 */
export interface TransportAnswer {
  response?: string;
  accepted: string[];
  rejected: RefusedRecipient[];
}

export interface MailTransport {
  send(raw: Buffer, envelope: Envelope, tags?: SendTags): Promise<TransportAnswer>;
}

/** The relay refused the message for every recipient, or could not be reached; nothing was sent. */
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
          accepted: unknown[];
          rejected: unknown[];
          rejectedErrors?: { recipient?: string; response?: string; message?: string }[];
          response?: string;
        };
        const accepted = info.accepted.map(String);
        if (!accepted.length) throw new DeliveryError(`The relay rejected ${info.rejected.map(String).join(', ')}`);
        // Refused for some recipients only: the message left for the others, so this is an answer, not a failure.
        const reasons = new Map((info.rejectedErrors ?? []).map((e) => [e.recipient, e.response ?? e.message]));
        const rejected = info.rejected.map(String).map((address) => ({
          address,
          reason: reasons.get(address) ?? 'refused by the relay',
        }));
        return { response: info.response, accepted, rejected };
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

/** SES message tags: names and values of letters, digits, `_`, `-`, `.` and `@` (values: up to 256). */
const SES_TAG_VALUE = /^[A-Za-z0-9_.@-]{1,256}$/;

/** The tags naming who sent the message; a value SES would refuse is left out rather than failing the send. */
export const sesTags = (tags: SendTags) =>
  Object.entries(SES_TAG_NAMES)
    .map(([key, Name]) => ({ Name, Value: tags[key as keyof SendTags] }))
    .filter((tag) => SES_TAG_VALUE.test(tag.Value));

function sesTransport(configurationSet: string): MailTransport {
  const ses = traced(new SESv2Client({ requestHandler }));
  return {
    async send(raw, envelope, tags) {
      try {
        const result = await ses.send(
          new SendEmailCommand({
            FromEmailAddress: envelope.from,
            Destination: { ToAddresses: envelope.to },
            Content: { Raw: { Data: raw } },
            // The configuration set publishes the message's delivery, bounce, complaint and reject
            // events (functions/ses-events); the tags tell whose message each event is about.
            ...(configurationSet ? { ConfigurationSetName: configurationSet } : {}),
            ...(tags ? { EmailTags: sesTags(tags) } : {}),
          }),
        );
        return { response: result.MessageId, accepted: envelope.to, rejected: [] };
      } catch (error) {
        throw new DeliveryError(`Amazon SES refused the message: ${(error as Error).message}`, { cause: error });
      }
    },
  };
}

// Read at cold start: a function missing SMTP_RELAY_URL fails to start rather than on a send.
const TRANSPORT = env.mailTransport();
const RELAY_URL = TRANSPORT === 'smtp' ? env.smtpRelayUrl() : undefined;
const CONFIGURATION_SET = env.sesConfigurationSet();
let transport: MailTransport | undefined;

export function mailTransport(): MailTransport {
  transport ??= TRANSPORT === 'ses' ? sesTransport(CONFIGURATION_SET) : smtpTransport(RELAY_URL!);
  return transport;
}
