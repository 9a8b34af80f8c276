import type { ApplicationContext } from '#shared/caller';
import { env } from '#shared/config';
import { unseal } from '#shared/crypto/sealed';
import { normalAddress } from '#shared/db/postings';
import { dkimSign } from '#shared/domains/dkim';
import * as store from '#shared/domains/store';
import { InvalidRequestError, MailDeliveryError, NotFoundError } from '#shared/errors';
import { newId } from '#shared/ids';
import { trackingOnCreate } from '#shared/mail/tracking';
import { DeliveryError, mailTransport, type TransportAnswer } from '#shared/mail/transport';
import { announceRelayAnswer } from '#shared/deliverability/relay';
import { TRANSACTIONAL } from '#shared/deliverability/tags';
import { checkCustomHeaders, collectAttachments } from '#shared/mailbox/outgoing';
import { requestHash, withIdempotency, type SendProgress } from '#shared/mailbox/send';
import { transactionalIdempotencyKey } from '#shared/db/keys';
import { bodyText, snippetOf } from '#shared/mailbox/text';
import { renderApplicationTemplate } from '#shared/templates/templates';
import { clock } from '#shared/time';
import { transactWrite } from '#shared/db/transact';
import { trackedMessagePut } from '#shared/tracking/records';
import type { UploadedFile } from '#shared/uploaded-file';
import type { TransactionalSendBody } from '#schemas/domains';

/**
 * Transactional send (`POST /v3/domains/{domain_name}/messages/send`): a message from an address on
 * one of the application's verified domains, with no grant and no mailbox. It is checked and composed
 * with the grant sends' code (attachments, custom headers, tracking options, application templates,
 * nodemailer's composer), signed with the domain's DKIM key, and handed to the same mail transport as
 * Agent Account sends (SES deployed, the SMTP relay locally). Nothing is stored but its tracking
 * (opens and links, under the application): there is no Sent folder without a mailbox.
 */
const TRACKING_HOSTNAME = env.trackingHostname();
/** An RFC 5322 Message-ID: what `reply_to_message_id` must be here, with no stored message to look up. */
const MESSAGE_ID_HEADER = /^<[^<>\s@]+@[^<>\s@]+>$/;

/** An answer kept for replays up to this size (JSON characters); a larger one is kept without its `body`. */
const REMEMBERED_ANSWER_CHARS = 300_000;

/**
 * The send under the request's Idempotency-Key, kept for the application (there is no grant): the
 * same key with the same request within the hour answers the first send's answer again
 * (`replayed`), as grant sends do (shared/mailbox/send.ts withIdempotency). Nothing being stored, the
 * key keeps the answer itself.
 */
export async function sendTransactional(
  app: ApplicationContext,
  domainName: string,
  body: TransactionalSendBody,
  files: UploadedFile[] = [],
  idempotencyKey?: string,
) {
  type Answer = Awaited<ReturnType<typeof sendNow>>;
  return withIdempotency(
    (key) => transactionalIdempotencyKey(app.applicationId, key),
    idempotencyKey,
    () => requestHash({ domain: domainName.toLowerCase(), body }, files),
    (progress) => sendNow(app, domainName, body, files, progress),
    async (remembered) => JSON.parse(remembered) as Answer,
    (answer) => {
      const whole = JSON.stringify(answer);
      return whole.length <= REMEMBERED_ANSWER_CHARS ? whole : JSON.stringify({ ...answer, body: undefined });
    },
  );
}

async function sendNow(
  app: ApplicationContext,
  domainName: string,
  body: TransactionalSendBody,
  files: UploadedFile[],
  progress: SendProgress,
) {
  const name = domainName.toLowerCase().replace(/\.$/, '');
  const domain = await store.getDomainByName(app.applicationId, name);
  if (!domain)
    throw new NotFoundError(
      `The domain ${name.slice(0, 253)} is not registered by this application: register it (POST /v3/admin/domains) and verify its ownership before sending from it`,
    );
  if (!domain.verified.ownership)
    throw new InvalidRequestError(
      `The domain ${name} (${domain.id}) is not verified: publish its ownership record and verify it (POST /v3/admin/domains/${domain.id}/verify) before sending from it`,
    );
  const from = Array.isArray(body.from) ? body.from[0]! : body.from;
  const fromAddress = normalAddress(from.email);
  if (fromAddress.slice(fromAddress.lastIndexOf('@') + 1) !== name)
    throw new InvalidRequestError(`'from.email' must be an address on ${name}, the domain this message is sent from`);
  const to = body.to ?? [];
  const cc = body.cc ?? [];
  const bcc = body.bcc ?? [];
  if (!to.length && !cc.length && !bcc.length)
    throw new InvalidRequestError("A message needs at least one recipient in 'to', 'cc' or 'bcc'");
  if (body.reply_to_message_id !== undefined && !MESSAGE_ID_HEADER.test(body.reply_to_message_id))
    throw new InvalidRequestError(
      "'reply_to_message_id' must be the Message-ID header (<…@…>) of the message answered: transactional sends keep no messages to look one up by ID",
    );
  const tracking =
    body.tracking_options === undefined ? undefined : trackingOnCreate(body.tracking_options, TRACKING_HOSTNAME);
  let { subject, body: text } = body;
  if (body.template) {
    const rendered = await renderApplicationTemplate(
      app.applicationId,
      body.template.id,
      body.template.variables ?? {},
      body.template.strict,
    );
    subject ??= rendered.subject;
    text ??= rendered.body;
  }
  const attachments = collectAttachments(body.attachments, files);
  const headers = checkCustomHeaders(body.custom_headers);
  const isPlaintext = body.is_plaintext ?? false;
  const id = newId('message');
  const messageIdHeader = `<${id.slice(4)}@${name}>`;
  const date = new Date(clock.nowMs());
  const inReplyTo = body.reply_to_message_id;
  // Loaded on the first send, not at cold start, as for grant sends.
  const { composeMime } = await import('#shared/mail/compose');
  const sentAt = Math.floor(date.getTime() / 1000);
  // Opens and links are tracked as a grant's send's are, the tracked message kept under the
  // application (recorded before it leaves: an open can come at once). Replies are not: there is no
  // mailbox for them to arrive in.
  let html = isPlaintext ? undefined : (text ?? '');
  if (html !== undefined && tracking?.domain_name && (tracking.opens || tracking.links)) {
    const { trackedHtml } = await import('#shared/tracking/rewrite');
    html = (
      await trackedHtml(html, {
        hostname: tracking.domain_name,
        opens: tracking.opens,
        links: tracking.links,
        applicationId: app.applicationId,
        messageId: id,
      })
    ).html;
    await transactWrite([
      trackedMessagePut({
        application_id: app.applicationId,
        message_id: id,
        message_id_header: messageIdHeader,
        sent_at: sentAt,
        opens: tracking.opens,
        links: tracking.links,
        thread_replies: false,
        ...(tracking.label !== undefined ? { label: tracking.label } : {}),
        domain_name: tracking.domain_name,
      }),
    ]);
  }
  const raw = await composeMime({
    from,
    to,
    cc,
    bcc,
    replyTo: body.reply_to ?? [],
    subject: subject ?? '',
    ...(html === undefined ? { text: text ?? '' } : { html }),
    attachments,
    messageId: messageIdHeader,
    ...(inReplyTo ? { inReplyTo } : {}),
    references: inReplyTo ? [inReplyTo] : [],
    headers,
    date,
  });
  const signed = await dkimSign(raw, {
    domainName: name,
    keySelector: domain.dkim_selector,
    privateKey: await unseal(
      domain.dkim_private_key,
      store.DKIM_SEAL_PURPOSE,
      store.domainSealContext(domain.application_id, domain.id),
    ),
  });
  const recipients = [...new Set([...to, ...cc, ...bcc].map((p) => normalAddress(p.email)))];
  const tags = { application: app.applicationId, grant: TRANSACTIONAL, message: id };
  let answer: TransportAnswer;
  progress.deliveryStarted();
  try {
    answer = await mailTransport().send(signed, { from: fromAddress, to: recipients }, tags);
  } catch (error) {
    if (error instanceof DeliveryError)
      throw new MailDeliveryError(`The message was not sent: ${error.message}`, { cause: error });
    throw error;
  }
  // The relay's own answer (MAIL_TRANSPORT=smtp): message.transactional.delivered / .rejected. With
  // SES they come later, from its events (functions/ses-events).
  const emails = (list: { email: string }[]) => list.map((p) => p.email);
  await announceRelayAnswer(
    { applicationId: app.applicationId, grantId: null },
    {
      id,
      subject: subject ?? '',
      from: fromAddress,
      to: emails(to),
      ...(cc.length ? { cc: emails(cc) } : {}),
      ...(bcc.length ? { bcc: emails(bcc) } : {}),
      sent_at: sentAt,
      ...(body.metadata ? { metadata: body.metadata } : {}),
    },
    answer,
  );
  return {
    id,
    message_id: id,
    object: 'message' as const,
    from: [from],
    to,
    cc,
    bcc,
    reply_to: body.reply_to ?? [],
    subject: subject ?? '',
    body: text ?? '',
    snippet: snippetOf(bodyText(text ?? '', isPlaintext)),
    date: sentAt,
    attachments: attachments.map((a) => ({
      filename: a.filename,
      content_type: a.contentType,
      size: a.content.length,
      is_inline: a.inline,
      content_disposition: a.inline ? 'inline' : 'attachment',
      ...(a.contentId ? { content_id: a.contentId } : {}),
    })),
    ...(tracking
      ? {
          tracking_options: {
            opens: tracking.opens,
            links: tracking.links,
            ...(tracking.label !== undefined ? { label: tracking.label } : {}),
          },
        }
      : {}),
    ...(body.metadata ? { metadata: body.metadata } : {}),
    ...(headers.length ? { headers } : {}),
  };
}
