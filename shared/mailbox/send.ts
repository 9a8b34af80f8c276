import { createHash, randomBytes } from 'node:crypto';
import { requireMessage } from '#shared/mailbox/lookup';
import { normalAddress } from '#shared/mailbox/postings';
import { spoolLocalCopies } from '#shared/mail/local-spool';
import { checkCustomHeaders, collectWithUploads, senderOf } from '#shared/mailbox/outgoing';
import { isUploaded, uploadStream, withContents, type UploadedAttachment } from '#shared/uploads/attachments';
import { placementOf } from '#shared/governance/placement';
import {
  blockingRule,
  evaluationOf,
  governanceOf,
  partyOf,
  recordEvaluation,
  type Governance,
} from '#shared/governance/decide';
import type { PolicyLimits } from '#schemas/governance';
import { BODY_INLINE_MAX, storeMessage, viewOf, type StoreExtras } from '#shared/mailbox/store';
import type { HeaderRecord, MessageRecord, NewAttachment, ParticipantRecord } from '#shared/mailbox/types';
import { messageView } from '#shared/mailbox/views';
import { env } from '#shared/config';
import { resolveAgentAddresses, type GrantRecord } from '#shared/db/grants';
import type { OutboxEntry } from '#shared/db/outbox';
import { idempotencyKey, type Key } from '#shared/db/keys';
import * as sending from '#shared/db/sending';
import { TransactionConditionError, transactWrite, type NamedItems } from '#shared/db/transact';
import { ConflictError, ForbiddenError, InvalidRequestError, MailDeliveryError, RateLimitError } from '#shared/errors';
import type { UploadedFile } from '#shared/uploaded-file';
import { newId, type MessageId, type ThreadId } from '#shared/ids';
import { DeliveryError, mailTransport, type SendTags, type TransportAnswer } from '#shared/mail/transport';
import { relayAnswerEntries } from '#shared/deliverability/relay';
import { appendSignature, renderStoredTemplate, requireSignature } from '#shared/templates/templates';
import { trackingOnCreate, type TrackingSettings } from '#shared/mail/tracking';
import { outgoingTracking, type OutgoingTracking } from '#shared/tracking/outgoing';
import { clock } from '#shared/time';
import type { SendMessageBody } from '#schemas/mail';
import { listFolders } from '#shared/mailbox/folders';

/**
 * Sending from an Agent Account: render (template, signature), compose MIME, hold a unit of the daily
 * quota (see claimsOf), relay to outside addresses through the mail transport, then commit the Sent
 * copy together with the unit and one job that stores the copies of Agent Accounts of this deployment
 * among the recipients (shared/services/local-delivery.ts), so the answer does not wait for them,
 * however many. Nothing is stored in Sent when the relay refuses the message.
 */
const DAILY_QUOTA = env.dailySendQuota();
const TRACKING_HOSTNAME = env.trackingHostname();
const MESSAGE_ID_DOMAIN = env.messageIdDomain();
const IDEMPOTENCY_SECONDS = 3600;

/** A message to send, as the send endpoint validates it (drafts build the same from their record). */
export type OutgoingInput = SendMessageBody;

export interface PreparedMessage {
  from: ParticipantRecord;
  to: ParticipantRecord[];
  cc: ParticipantRecord[];
  bcc: ParticipantRecord[];
  replyTo: ParticipantRecord[];
  subject: string;
  body: string;
  isPlaintext: boolean;
  starred: boolean;
  attachments: NewAttachment[];
  /** Those of `attachments` that came from uploads (large): their MIME parts are streamed (composePrepared). */
  uploaded?: readonly NewAttachment[];
  /** Uploads not read (prepareOutgoing's `lazyUploads`): streamed from S3 into the MIME, copied in S3 for the Sent copy. */
  uploads?: readonly UploadedAttachment[];
  headers: HeaderRecord[];
  metadata: Record<string, string>;
  threadId?: ThreadId;
  inReplyTo?: string;
  references: string[];
  /** The account's limits and rules, read once for this message. */
  governance: Governance;
  /** iMIP: an iCalendar REQUEST, CANCEL or REPLY this message carries (shared/agent/itip.ts, shared/services/itip.ts). */
  calendar?: { method: string; content: string };
  /** What the message tracks (opens, links, thread replies), when the send or draft asked for it. */
  tracking?: TrackingSettings;
}

/**
 * The raw MIME of a prepared message, under its Message-ID and date. Uploaded files are appended as
 * parts streamed into a buffer sized for the message (shared/uploads/mime.ts): the message is held
 * once, not gathered and then concatenated. `tracking` rewrites its HTML (opens, links).
 */
export async function composePrepared(
  prepared: PreparedMessage,
  messageIdHeader: string,
  date: Date,
  tracking?: OutgoingTracking,
): Promise<Buffer> {
  // Loaded on the first send, not at cold start: nodemailer's composer serves only this step.
  const { composeMime } = await import('#shared/mail/compose');
  // Open and link tracking rewrite the HTML of the MIME only (the Sent copy keeps the body as
  // written); loaded for a tracked message only: signing reads the deployment's key material.
  let html = prepared.isPlaintext ? undefined : prepared.body;
  if (html !== undefined && tracking?.body) {
    const { trackedHtml } = await import('#shared/tracking/rewrite');
    html = (await trackedHtml(html, tracking.body)).html;
  }
  const streamed = new Set(prepared.uploaded ?? []);
  const bare = await composeMime({
    from: prepared.from,
    to: prepared.to,
    cc: prepared.cc,
    bcc: prepared.bcc,
    replyTo: prepared.replyTo,
    subject: prepared.subject,
    ...(html === undefined ? { text: prepared.body } : { html }),
    attachments: prepared.attachments.filter((a) => !streamed.has(a)),
    messageId: messageIdHeader,
    inReplyTo: prepared.inReplyTo,
    references: prepared.references,
    headers: prepared.headers,
    date,
    ...(prepared.calendar ? { calendar: prepared.calendar } : {}),
  });
  const parts = [
    ...prepared.attachments.filter((a) => streamed.has(a)).map((a) => ({ ...a, size: a.content.length })),
    ...(prepared.uploads ?? []).map((u) => ({ ...u, content: () => uploadStream(u.key) })),
  ];
  if (!parts.length) return bare;
  const { appendStreamedParts } = await import('#shared/uploads/mime');
  return appendStreamedParts(bare, parts);
}

/**
 * Renders a message's `template`: the API's send paths pass renderStoredTemplate. The jobs worker's
 * mail (iMIP) never has a template and passes none, so that worker's bundle leaves the template
 * engines out (about 210 KB).
 */
export type TemplateRenderer = typeof renderStoredTemplate;

/** What a reply takes from the message it answers: its thread, and the threading headers to carry on. */
export interface RepliedMessage {
  thread_id: string;
  message_id_header?: string | undefined;
  references: readonly string[];
}

/** The message a reply answers, in the stored mailbox (a live provider reads it from its own API instead). */
export const storedRepliedMessage = (grant: GrantRecord, messageId: string): Promise<RepliedMessage> =>
  requireMessage(grant, messageId);

/**
 * `stored`: attachments already held as bytes (a draft's, read from S3), sent before those of `input`
 * and `files`. `replied`: where the message `reply_to_message_id` names is read from. `options.draft`:
 * a draft composed at its provider, which may have no recipient yet.
 */
export async function prepareOutgoing(
  grant: GrantRecord,
  input: OutgoingInput,
  files: UploadedFile[] = [],
  stored: NewAttachment[] = [],
  renderTemplate?: TemplateRenderer,
  replied: (grant: GrantRecord, messageId: string) => Promise<RepliedMessage> = storedRepliedMessage,
  /**
   * `draft`: a draft kept at a provider, composed before it has recipients. `lazyUploads`: uploads are
   * left in S3 (`uploads`), for a submission that streams and copies them (deliverAndStore).
   */
  options: { draft?: boolean; lazyUploads?: boolean } = {},
): Promise<PreparedMessage> {
  if (input.send_at !== undefined) throw new Error('prepareOutgoing: a scheduled send is prepared without its send_at');
  // Tracking settings follow the draft rules (hostname validated and canonicalised).
  const tracking =
    input.tracking_options !== undefined ? trackingOnCreate(input.tracking_options, TRACKING_HOSTNAME) : undefined;
  let { subject, body } = input;
  if (input.template) {
    if (!renderTemplate) throw new Error('prepareOutgoing: a message with a template is prepared with its renderer');
    const rendered = await renderTemplate(grant, input.template, { subject, body });
    subject = rendered.subject;
    body = rendered.body;
  }
  const isPlaintext = input.is_plaintext ?? false;
  if (input.signature_id) {
    const signature = await requireSignature(grant.id, input.signature_id);
    body = appendSignature(body ?? '', signature.body, isPlaintext);
  }
  const to = input.to ?? [];
  const cc = input.cc ?? [];
  const bcc = input.bcc ?? [];
  if (!options.draft && !to.length && !cc.length && !bcc.length)
    throw new InvalidRequestError("A message needs at least one recipient in 'to', 'cc' or 'bcc'");
  let threadId: ThreadId | undefined;
  let inReplyTo: string | undefined;
  let references: string[] = [];
  if (input.reply_to_message_id) {
    const original = await replied(grant, input.reply_to_message_id);
    threadId = original.thread_id as ThreadId;
    if (original.message_id_header) {
      inReplyTo = original.message_id_header;
      references = [...original.references, original.message_id_header].slice(-50);
    }
  }
  const collected = await collectWithUploads(grant, input.attachments, files);
  const lazy = options.lazyUploads ? collected.filter(isUploaded) : [];
  const read = await withContents(options.lazyUploads ? collected.filter((a) => !isUploaded(a)) : collected);
  const uploaded = options.lazyUploads ? [] : read.filter((_, i) => isUploaded(collected[i]!));
  const attachments = [...stored, ...read];
  const governance = await governanceOf(grant);
  checkAttachmentLimits(governance.limits, [...attachments, ...lazy]);
  return {
    from: senderOf(grant, input.from),
    to,
    cc,
    bcc,
    replyTo: input.reply_to ?? [],
    subject: subject ?? '',
    body: body ?? '',
    isPlaintext,
    starred: input.starred ?? false,
    attachments,
    headers: checkCustomHeaders(input.custom_headers),
    metadata: input.metadata ?? {},
    ...(tracking ? { tracking } : {}),
    threadId,
    inReplyTo,
    references,
    governance,
    ...(uploaded.length ? { uploaded } : {}),
    ...(lazy.length ? { uploads: lazy } : {}),
  };
}

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const secondsToMidnight = (ms: number) =>
  Math.ceil(
    (Date.UTC(new Date(ms).getUTCFullYear(), new Date(ms).getUTCMonth(), new Date(ms).getUTCDate() + 1) - ms) / 1000,
  );

/**
 * How long a send's claims hold when nothing converts or gives them up: longer than any function that
 * sends can run (Lambda's 15 minutes), so a live send never loses them and a dead one's lapse.
 */
export const SEND_CLAIM_SECONDS = 15 * 60;

/** One more thing a send claims with its quota unit (a draft: shared/mailbox/draft-send.ts). */
export interface SendClaim {
  /** The items that take it until `until` (epoch seconds), by conditions that a lapsed claim no longer holds. */
  take(until: number): NamedItems;
  /** The API error for a take whose named conditions failed. */
  refused(error: TransactionConditionError): Promise<Error>;
  /** What the Sent copy's transaction commits to convert it. */
  convert(): { items: NamedItems; outbox: OutboxEntry[] };
  /** Gives it up at once: the relay refused the message. */
  giveUp(): Promise<void>;
}

/** The claims of one send (see claimsOf). */
export interface SendClaims {
  /** Takes them, all or none: a draft's refusal (404, 409) first, then the quota's (429). */
  take(): Promise<void>;
  /** What the Sent copy's transaction commits to convert them; after `take`. */
  convert(): { items: NamedItems; outbox: OutboxEntry[] };
  /** Gives them up at once, instead of letting them lapse: the relay refused the message, nothing left. */
  giveUp(): Promise<void>;
}

/**
 * What a send claims right before its message starts to leave: a unit of the Agent Account's daily
 * quota (`limits`: its workspace policy's `limit_count_daily_email_sent`, else DAILY_SEND_QUOTA;
 * undefined for a grant without one) and `claim`, in one transaction of conditional writes that
 * lapse by themselves after SEND_CLAIM_SECONDS. The transaction that commits the Sent copy converts
 * them (the unit counted, a draft deleted). Nothing puts them back: a send that dies before its
 * commit leaves claims that lapse, and a later send takes them over.
 */
export function claimsOf(grant: GrantRecord, limits: PolicyLimits | undefined, claim?: SendClaim): SendClaims {
  let hold: sending.SendQuotaHold | undefined;
  /** A failed condition of `claim` is its own API error (a draft sent or changed by another request). */
  const named = async (error: unknown) => {
    if (claim && error instanceof TransactionConditionError) throw await claim.refused(error);
    throw error;
  };
  return {
    async take() {
      const now = clock.nowMs();
      const nowSeconds = Math.floor(now / 1000);
      const until = nowSeconds + SEND_CLAIM_SECONDS;
      const items = claim?.take(until) ?? [];
      if (!limits) {
        if (items.length) await transactWrite(items).catch(named);
        return;
      }
      const quota = limits.limit_count_daily_email_sent ?? DAILY_QUOTA;
      const wanted: sending.SendQuotaHold = {
        grantId: grant.id,
        day: utcDay(now),
        limit: quota,
        id: randomBytes(8).toString('hex'),
        until,
        expiresAt: nowSeconds + 2 * 86400,
      };
      if (!(await sending.holdSendQuota(wanted, items, nowSeconds).catch(named))) {
        throw new RateLimitError(
          `This Agent Account has sent its daily quota of ${quota} messages; the quota resets at 00:00 UTC`,
          secondsToMidnight(now),
        );
      }
      hold = wanted;
    },
    convert() {
      const converted = claim?.convert() ?? { items: [], outbox: [] };
      return {
        items: [...(hold ? [sending.sendQuotaCommitItem(hold)] : []), ...converted.items],
        outbox: converted.outbox,
      };
    },
    async giveUp() {
      await Promise.all([hold && sending.releaseSendQuotaHold(hold), claim?.giveUp()]);
    },
  };
}

/** The attachment limits of the account's workspace policy; 400 naming the limit a message exceeds. */
export function checkAttachmentLimits(
  limits: PolicyLimits,
  list: readonly ({ filename: string; contentType: string } & ({ content: Buffer } | { size: number }))[],
): void {
  const attachments = list.map((a) => ({ ...a, size: 'size' in a ? a.size : a.content.length }));
  const count = limits.limit_attachment_count_limit;
  if (count !== undefined && attachments.length > count) {
    throw new InvalidRequestError(
      `The message has ${attachments.length} attachments; this Agent Account's policy allows ${count} (limit_attachment_count_limit)`,
    );
  }
  const size = limits.limit_attachment_size_limit;
  const large = size !== undefined ? attachments.find((a) => a.size > size) : undefined;
  if (large)
    throw new InvalidRequestError(
      `Attachment '${large.filename}' has ${large.size} bytes; this Agent Account's policy allows ${size} per attachment (limit_attachment_size_limit)`,
    );
  const types = limits.limit_attachment_allowed_types;
  if (types?.length) {
    const allowed = new Set(types.map((t) => t.toLowerCase()));
    const refused = attachments.find((a) => {
      const type = a.contentType.split(';')[0]!.trim().toLowerCase();
      return !allowed.has(type) && !allowed.has(`${type.split('/')[0]}/*`);
    });
    if (refused)
      throw new InvalidRequestError(
        `Attachment '${refused.filename}' is ${refused.contentType}; this Agent Account's policy allows ${types.join(', ')} (limit_attachment_allowed_types)`,
      );
  }
}

/** What a send tells its Idempotency-Key (see withIdempotency). */
export interface SendProgress {
  /** Called just before the message starts to leave: to the relay, or into a local inbox. */
  deliveryStarted(): void;
  /** Awaited just before the message is handed to the mail relay (only when it has outside recipients). */
  beforeRelay?(): Promise<void>;
}

/** What a send commits with its Sent copy besides the local deliveries (see deliverAndStore). */
export interface SentCopyOptions {
  /** The ID the Sent copy gets (a scheduled send names it when scheduled). */
  messageId?: MessageId;
  /** Items and outbox entries for the Sent copy's transaction, given the stored record. */
  also?: StoreExtras;
  /** What the send claims with its quota unit (a draft), converted by the Sent copy's transaction. */
  claim?: SendClaim;
}

/** Hands a message to the mail relay: its answer, or its refusal (nothing left); throws anything else. */
const relay = (
  raw: Buffer,
  envelope: { from: string; to: string[] },
  tags: SendTags,
): Promise<TransportAnswer | DeliveryError> =>
  mailTransport()
    .send(raw, envelope, tags)
    .then(
      (answer) => answer,
      (error: unknown) => {
        if (error instanceof DeliveryError) return error;
        throw error;
      },
    );

/**
 * Delivers a prepared message and stores the Sent copy. The outbound rules and the policy's limits
 * are checked first (403, 400: nothing claimed), then the send's claims are taken (429 for the quota)
 * and converted by the Sent copy's transaction. A MailDeliveryError means nothing left: the relay
 * refused the message before any local inbox got it, and the claims were given up.
 */
export async function deliverAndStore(
  grant: GrantRecord,
  prepared: PreparedMessage,
  progress?: SendProgress,
  commitWith: OutboxEntry[] = [],
  options: SentCopyOptions = {},
) {
  // The outbound rules of the account's workspace: a block refuses the send (403, nothing sent or
  // stored); other actions place the Sent copy.
  const decision = await prepared.governance.decide('outbound', {
    from: partyOf(prepared.from.email),
    recipients: [...prepared.to, ...prepared.cc, ...prepared.bcc]
      .map((p) => partyOf(p.email))
      .filter((p) => p !== undefined),
    outboundType: prepared.inReplyTo || prepared.references.length ? 'reply' : 'compose',
  });
  if (decision?.actions.blocked) {
    await recordEvaluation(evaluationOf(grant, 'outbound_send', decision, null));
    const rule = blockingRule(decision)!;
    throw new ForbiddenError(
      `The send was blocked by the outbound rule '${rule.name}' (${rule.id}) of this Agent Account's workspace; nothing was sent`,
    );
  }
  const messageIdHeader = `<${newId('message').slice(4)}@${MESSAGE_ID_DOMAIN}>`;
  const date = new Date(clock.nowMs());
  // Taken before composing: the tracking URLs in the MIME name the Sent copy.
  const messageId = options.messageId ?? newId('message');
  const tracking = outgoingTracking(grant, messageId, prepared.tracking);
  const raw = await composePrepared(prepared, messageIdHeader, date, tracking);

  const mimeLimit = prepared.governance.limits.limit_size_total_mime;
  if (mimeLimit !== undefined && raw.length > mimeLimit) {
    throw new InvalidRequestError(
      `The message is ${raw.length} bytes as MIME; this Agent Account's policy allows ${mimeLimit} (limit_size_total_mime)`,
    );
  }
  // Who is hosted here and who is outside.
  const recipients = [...new Set([...prepared.to, ...prepared.cc, ...prepared.bcc].map((p) => normalAddress(p.email)))];
  const { grants: local, unknown: external } = await resolveAgentAddresses(recipients);

  const claims = claimsOf(grant, prepared.governance.limits, options.claim);
  await claims.take();
  progress?.deliveryStarted();
  // The transport tags the message with its ID (taken above) for its deliverability events.
  let deliverability: OutboxEntry[] = [];
  if (external.length) {
    await progress?.beforeRelay?.();
    const tags = { application: grant.application_id, grant: grant.id, message: messageId };
    const answer = await relay(raw, { from: prepared.from.email, to: external }, tags);
    if (answer instanceof DeliveryError) {
      // An answer, not a failure of ours: nothing left, so the claims go now (a retry sends at once)
      // rather than lapse.
      await claims.giveUp();
      throw new MailDeliveryError(`The message was not sent: ${answer.message}`, { cause: answer });
    }
    // The relay's own answer (MAIL_TRANSPORT=smtp): message.delivered / message.rejected, committed
    // with the Sent copy. With SES they come later, from its events (functions/ses-events).
    const emails = (list: ParticipantRecord[]) => list.map((p) => p.email);
    deliverability = relayAnswerEntries(
      { applicationId: grant.application_id, grantId: grant.id },
      {
        id: messageId,
        subject: prepared.subject,
        from: prepared.from.email,
        to: emails(prepared.to),
        ...(prepared.cc.length ? { cc: emails(prepared.cc) } : {}),
        ...(prepared.bcc.length ? { bcc: emails(prepared.bcc) } : {}),
        sent_at: Math.floor(date.getTime() / 1000),
        ...(Object.keys(prepared.metadata).length ? { metadata: prepared.metadata } : {}),
      },
      answer,
    );
  }

  const common = {
    subject: prepared.subject,
    from: [prepared.from],
    to: prepared.to,
    cc: prepared.cc,
    replyTo: prepared.replyTo,
    date: Math.floor(date.getTime() / 1000),
    body: prepared.body,
    isPlaintext: prepared.isPlaintext,
    // The calendar part is a part of the MIME like the attachments: stored copies list it as one. Uploads
    // are copied inside S3 from where they were uploaded, never read here.
    attachments: [
      ...prepared.attachments,
      ...(prepared.uploads ?? []).map(({ key, ...u }) => ({ ...u, copyFrom: key })),
      ...(prepared.calendar ? [calendarAttachment(prepared.calendar)] : []),
    ],
    headers: [
      { name: 'Message-ID', value: messageIdHeader },
      ...(prepared.inReplyTo ? [{ name: 'In-Reply-To', value: prepared.inReplyTo }] : []),
      ...prepared.headers,
    ],
    raw,
    messageIdHeader,
    inReplyTo: prepared.inReplyTo,
    references: prepared.references,
  };
  // Each receiving mailbox gets one copy, whatever the number of its addresses among the recipients,
  // stored by a job committed with the Sent copy (shared/services/local-delivery.ts). Mail to oneself
  // is the Sent copy, also in the inbox.
  const toSelf = local.some((g) => g.id === grant.id);
  const others = local.filter((g) => g.id !== grant.id);
  const placed = decision
    ? await placementOf(
        grant,
        decision.actions,
        { folders: toSelf ? ['sent', 'inbox'] : ['sent'], unread: false, starred: prepared.starred },
        listFolders,
      )
    : undefined;
  const jobs = others.length
    ? (
        await spoolLocalCopies(
          messageIdHeader.slice(1, messageIdHeader.indexOf('@')),
          common,
          others,
          grant,
          BODY_INLINE_MAX,
        )
      ).map((job) => ({
        job,
        id: newId('job'),
        applicationId: grant.application_id,
      }))
    : [];
  const sent = await storeMessage({
    ...common,
    grant,
    threadId: prepared.threadId,
    bcc: prepared.bcc,
    unread: placed?.unread ?? false,
    starred: placed?.starred ?? prepared.starred,
    folders: placed?.folders ?? (toSelf ? ['sent', 'inbox'] : ['sent']),
    metadata: prepared.metadata,
    jobs: [...jobs, ...commitWith, ...deliverability],
    id: messageId,
    also: (record) => {
      const extra = options.also?.(record) ?? { items: [], outbox: [] };
      const converted = claims.convert();
      return {
        items: [...extra.items, ...converted.items, ...(tracking ? [tracking.item(record)] : [])],
        outbox: [...extra.outbox, ...converted.outbox],
      };
    },
  });
  if (decision)
    await recordEvaluation(
      evaluationOf(grant, 'outbound_send', decision, sent.record.id, { folder_ids: placed!.folderIds }),
    );
  return sent.record;
}

const calendarAttachment = (calendar: { method: string; content: string }) => ({
  filename: 'invite.ics',
  contentType: `text/calendar; charset=utf-8; method=${calendar.method}`,
  content: Buffer.from(calendar.content, 'utf8'),
  inline: false,
});

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** JSON with object keys sorted at every level: the same value always gives the same text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * What an Idempotency-Key remembers of a send request: what was asked, not how it was encoded. A
 * retry must match even when its bytes differ: a multipart body has a boundary the client draws
 * anew for each attempt, and JSON may come with other spacing or key order. So: the validated JSON
 * body (keys sorted), then each file in order by field name, filename, content type and SHA-256.
 */
export function requestHash(body: unknown, files: readonly UploadedFile[] = []): string {
  const parts = [
    canonicalJson(body),
    ...files.map((f) => JSON.stringify([f.fieldname, f.filename, f.contentType, sha256(f.content)])),
  ];
  return sha256(parts.join('\n'));
}

/** Where a send's Idempotency-Key is kept: a grant's sends under the grant, others (transactional sends) where this says. */
export type IdempotencyScope = (key: string) => Key;

/**
 * Runs `send` at most once per Idempotency-Key: the same key with the same request within an hour
 * replays the first answer (`replayed: true`); with another request it is a 409, and so it is while
 * the first request has no recorded outcome (see below). `hash` is only computed when a key is given.
 */
export async function withIdempotency<T extends { id: string }>(
  scope: GrantRecord | IdempotencyScope,
  key: string | undefined,
  hash: () => string,
  send: (progress: SendProgress) => Promise<T>,
  replay: (outcomeId: string) => Promise<T>,
  /** What the key remembers of the outcome, for `replay` (the message's ID unless said otherwise). */
  outcomeId: (result: T) => string = (result) => result.id,
): Promise<{ result: T; replayed: boolean }> {
  if (key === undefined) return { result: await send({ deliveryStarted() {} }), replayed: false };
  if (key.length === 0 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
    throw new InvalidRequestError('Idempotency-Key must be 1 to 255 visible ASCII characters');
  }
  const requestHash = hash();
  const now = clock.nowSeconds();
  const itemKey = typeof scope === 'function' ? scope(key) : idempotencyKey(scope.id, key);
  const existing = await sending.claimIdempotencyKey(itemKey, {
    request_hash: requestHash,
    state: 'in_progress',
    created_at: now,
    expires_at: now + IDEMPOTENCY_SECONDS,
  });
  if (existing) {
    if (existing.request_hash !== requestHash)
      throw new ConflictError('This Idempotency-Key was already used with a different request; use a new key');
    if (existing.state !== 'done' || !existing.message_id) {
      throw new ConflictError(
        'The request first sent with this Idempotency-Key has no recorded outcome: it is still being processed, or it failed after its message ' +
          'may already have been delivered. It is not sent again with this key; retry shortly, or look for it in the Sent folder before sending it with a new key',
      );
    }
    return { result: await replay(existing.message_id), replayed: true };
  }
  let started = false;
  try {
    const result = await send({ deliveryStarted: () => void (started = true) });
    await sending.completeIdempotencyKey(itemKey, { status: 200, message_id: outcomeId(result) });
    return { result, replayed: false };
  } catch (error) {
    // Nothing left (the failure came before delivery, or the relay refused the message): the key
    // may be used again, and a retry sends. Once delivery has started, a failure (storing the Sent
    // copy, recording the outcome) does not mean the recipients got nothing: the claim stays, so a
    // retry with this key gets the 409 above instead of a second copy of the message. (A function
    // that times out or crashes mid-send leaves the same claim, with the same answer.) The key
    // expires after IDEMPOTENCY_SECONDS like any other.
    if (!started || error instanceof MailDeliveryError) await sending.releaseIdempotencyKey(itemKey);
    throw error;
  }
}

/** Sends a prepared message and stores its Sent copy: the relay's (deliverAndStore above), or a mail server's submission (IMAP's SMTP and APPEND). */
export type Submission = (
  grant: GrantRecord,
  prepared: PreparedMessage,
  progress: SendProgress,
) => Promise<MessageRecord>;

/**
 * An immediate send through `submit`: composed once (templates, signatures, replies, attachments),
 * under the request's idempotency key, answered with the stored Sent copy.
 */
export const sendWith =
  (submit: Submission, options: { lazyUploads?: boolean } = {}) =>
  (grant: GrantRecord, input: OutgoingInput, context: { files: UploadedFile[]; idempotencyKey?: string }) =>
    withIdempotency(
      grant,
      context.idempotencyKey,
      () => requestHash(input, context.files),
      async (progress) => {
        const prepared = await prepareOutgoing(
          grant,
          input,
          context.files,
          [],
          renderStoredTemplate,
          storedRepliedMessage,
          options,
        );
        // The body is at hand: no need to read it back from S3 when it was stored there.
        return messageView(await submit(grant, prepared, progress), { body: prepared.body });
      },
      async (messageId) => viewOf(await requireMessage(grant, messageId)),
    );

/** Sends a message now through the relay (a scheduled send goes through shared/mailbox/scheduled.ts). */
export const sendMessage = /* @__PURE__ */ sendWith(
  (grant, prepared, progress) => deliverAndStore(grant, prepared, progress),
  { lazyUploads: true },
);
