import { messagePath } from '#shared/microsoft/reads';
import { composePrepared, prepareOutgoing, type PreparedMessage, type RepliedMessage } from '#shared/mailbox/send';
import type { NewAttachment } from '#shared/mailbox/types';
import type { GrantRecord } from '#shared/db/grants';
import { ApiError, InvalidRequestError, NotFoundError, ProviderError } from '#shared/errors';
import { newId } from '#shared/ids';
import { logger } from '#shared/logger';
import { graphClientOf, GraphNotFoundError, type GraphClient } from '#shared/microsoft/client';
import type { GraphHeader, GraphMessage } from '#shared/microsoft/graph-message';
import { graphMessages } from '#shared/microsoft/messages';
import { GuardedRequestError } from '#shared/net/request';
import type { AccountMail, Message } from '#shared/providers/contract';
import { backoff, MAX_ATTEMPTS, restFetch, retryAfterMs, sleepFor, WAIT_BUDGET_MS } from '#shared/providers/rest';
import { clock } from '#shared/time';
import { liveTracking, recordLiveTracking } from '#shared/tracking/outgoing';

/**
 * Provider B's outgoing side, shared by sends and scheduled sends (shared/microsoft/send.ts), mail the
 * API sends for the account (graphAccountMail below, apart from send.ts so that the jobs worker bundles
 * no template engine) and drafts (shared/microsoft/drafts.ts):
 *
 * - A prepared message (shared/mailbox/send.ts) is sent as the MIME it composes to, so that everything
 *   prepareOutgoing builds reaches the recipients as it is (custom headers, In-Reply-To and References,
 *   an iMIP calendar part): `POST …/sendMail` with the MIME in base64 as `text/plain`, which Graph
 *   delivers and saves in Sent Items. Graph takes at most 4 MB in such a request; a larger message is
 *   created as a draft from its MIME without its attachments, its attachments are added to the draft
 *   (below), and the draft is sent (`POST …/messages/{id}/send`).
 * - Attachments of a message held by Graph: up to SMALL_ATTACHMENT_MAX bytes POSTed as a fileAttachment
 *   with its bytes; larger ones (to 150 MB) through an upload session (`attachments/createUploadSession`),
 *   their bytes PUT in order to its `uploadUrl` in ranges of a multiple of 320 KiB, without our
 *   Authorization header (the URL carries its own credential, and is on another host).
 * - The answer is the Sent copy as Graph holds it. Neither sendMail nor send answers it (202, no body),
 *   and a message gets a new ID in Sent Items, so the copy is found by its Message-ID (ours, written
 *   into the MIME; a draft's own internetMessageId) with `$filter=internetMessageId eq '…'` on Sent
 *   Items. Graph saves the copy while it sends, a moment after answering: the lookup is repeated with
 *   growing waits for up to SENT_COPY_WAIT_MS. The local fake saves it before answering, so there the
 *   first lookup finds it; a copy still missing after the wait is a ProviderError saying the message
 *   was sent (an Idempotency-Key keeps its claim, so a retry with it is a 409, not a second message).
 */

/** Attachments POSTed with their bytes; larger ones go through an upload session (Graph: "under 3 MB"). */
export const SMALL_ATTACHMENT_MAX = 3_000_000;
/** Graph's largest attachment, uploaded in a session. */
export const LARGE_ATTACHMENT_MAX = 150 * 1024 * 1024;
/** The most base64 MIME Graph takes in one sendMail or create (4 MB). */
export const MIME_REQUEST_MAX = 4 * 1024 * 1024;
/** Bytes per PUT of an upload session: a multiple of 320 KiB, under Graph's 60 MiB. */
export const UPLOAD_CHUNK = 320 * 1024 * 16;
/** How long the Sent copy is looked for after Graph accepted the message. */
const SENT_COPY_WAIT_MS = 6_000;

/** Graph IDs are URL-safe base64; anything else names no message of the mailbox (and must not reach a path). */
export const isGraphId = (id: string) => /^[A-Za-z0-9_=-]{1,512}$/.test(id);

const headerOf = (headers: readonly GraphHeader[] | null | undefined, name: string) =>
  headers?.find((h) => h.name?.toLowerCase() === name)?.value?.trim() || undefined;

/**
 * What a reply composed for provider B needs of the message it answers (sends and drafts alike): its
 * conversation, Message-ID and References, read from Graph.
 */
export async function repliedOnGraph(grant: GrantRecord, messageId: string): Promise<RepliedMessage> {
  const notFound = () => new NotFoundError(`No message '${messageId}' in this grant's mailbox`);
  if (!isGraphId(messageId)) throw notFound();
  const client = await graphClientOf(grant);
  let message: GraphMessage;
  try {
    message = await client.call<GraphMessage>({
      path: messagePath(client, messageId),
      query: { $select: ['conversationId', 'internetMessageId', 'internetMessageHeaders'] },
    });
  } catch (error) {
    if (error instanceof GraphNotFoundError) throw notFound();
    throw error;
  }
  return {
    thread_id: message.conversationId ?? message.id,
    message_id_header: message.internetMessageId ?? headerOf(message.internetMessageHeaders, 'message-id'),
    references: (headerOf(message.internetMessageHeaders, 'references') ?? '').split(/\s+/).filter(Boolean),
  };
}

/** 400 naming an attachment Graph cannot take (over 150 MB), before anything is sent to it. */
export function checkAttachmentSizes(attachments: readonly NewAttachment[]): void {
  const large = attachments.find((a) => a.content.length > LARGE_ATTACHMENT_MAX);
  if (large)
    throw new InvalidRequestError(
      `Attachment '${large.filename}' has ${large.content.length} bytes; a microsoft grant's message takes attachments of at most ${LARGE_ATTACHMENT_MAX} bytes (Graph's limit)`,
    );
}

/** A small attachment as Graph's fileAttachment (its bytes in base64). */
export const fileAttachment = (a: NewAttachment) => ({
  '@odata.type': '#microsoft.graph.fileAttachment',
  name: a.filename,
  contentType: a.contentType,
  contentBytes: a.content.toString('base64'),
  isInline: a.inline,
  ...(a.contentId ? { contentId: a.contentId } : {}),
});

/** Adds attachments to a message Graph holds (a draft), in order: small ones POSTed, large ones uploaded. */
export async function addAttachments(
  client: GraphClient,
  messageId: string,
  attachments: readonly NewAttachment[],
): Promise<void> {
  checkAttachmentSizes(attachments);
  for (const attachment of attachments) {
    if (attachment.content.length <= SMALL_ATTACHMENT_MAX) {
      await client.call({
        method: 'POST',
        path: `${messagePath(client, messageId)}/attachments`,
        body: fileAttachment(attachment),
      });
      continue;
    }
    const session = await client.call<{ uploadUrl?: string | null }>({
      method: 'POST',
      path: `${messagePath(client, messageId)}/attachments/createUploadSession`,
      body: {
        AttachmentItem: {
          attachmentType: 'file',
          name: attachment.filename,
          size: attachment.content.length,
          contentType: attachment.contentType,
          isInline: attachment.inline,
          ...(attachment.contentId ? { contentId: attachment.contentId } : {}),
        },
      },
    });
    if (!session.uploadUrl) throw new ProviderError('Provider B answered an upload session without its uploadUrl');
    await upload(session.uploadUrl, attachment.content);
  }
}

/**
 * The bytes of an upload session, PUT range by range to its URL (no Authorization: the URL carries its
 * own). Each PUT is retried as the client retries a call (429 and 503 after Retry-After, 5xx and lost
 * connections with backoff, within the wait budget): a range is repeatable. A failure cancels the session.
 */
async function upload(uploadUrl: string, bytes: Buffer): Promise<void> {
  let url: URL;
  try {
    url = new URL(uploadUrl);
  } catch {
    throw new ProviderError('Provider B answered an upload session with an uploadUrl that is not a URL');
  }
  try {
    for (let start = 0; start < bytes.length; start += UPLOAD_CHUNK) {
      const chunk = bytes.subarray(start, Math.min(start + UPLOAD_CHUNK, bytes.length));
      await putRange(url, chunk, `bytes ${start}-${start + chunk.length - 1}/${bytes.length}`);
    }
  } catch (error) {
    await restFetch(url, { method: 'DELETE' }).catch(() => undefined);
    throw error;
  }
}

async function putRange(url: URL, chunk: Buffer, range: string): Promise<void> {
  let waited = 0;
  for (let attempt = 1; ; attempt++) {
    let status: number;
    let retryAfter: number | undefined;
    let said = '';
    try {
      const response = await restFetch(url, {
        method: 'PUT',
        headers: { 'content-range': range, 'content-type': 'application/octet-stream' },
        body: chunk,
      });
      if (response.ok) {
        await response.arrayBuffer();
        return;
      }
      status = response.status;
      retryAfter = retryAfterMs(response);
      said = (await response.text().catch(() => '')).slice(0, 300);
    } catch (error) {
      if (!(error instanceof GuardedRequestError) || error.kind === 'blocked') throw error;
      status = 0;
    }
    const retried = status === 0 || status === 429 || status >= 500;
    const delay = backoff(attempt, retryAfter, Math.random);
    if (retried && attempt < MAX_ATTEMPTS && waited + delay <= WAIT_BUDGET_MS) {
      waited += delay;
      await sleepFor(delay);
      continue;
    }
    throw new ProviderError(
      `Provider B refused a range of an attachment's upload (${range}: ${status || 'no answer'}) ${said}`.trim(),
    );
  }
}

/** The Sent copy of a message Graph has accepted, found by its Message-ID in Sent Items (see the module comment). */
export async function sentCopy(grant: GrantRecord, client: GraphClient, internetMessageId: string): Promise<Message> {
  const started = clock.nowMs();
  for (let attempt = 1; ; attempt++) {
    const page = await client.page<{ id: string }>({
      path: `${client.mailbox}/mailFolders/sentitems/messages`,
      query: {
        $filter: `internetMessageId eq '${internetMessageId.replace(/'/g, "''")}'`,
        $select: ['id'],
        $top: 1,
      },
    });
    const found = page.value[0];
    if (found) return graphMessages.get(grant, found.id, {});
    const delay = Math.min(250 * 2 ** (attempt - 1), 2_000);
    if (clock.nowMs() - started + delay > SENT_COPY_WAIT_MS) {
      logger.warn('provider B: Sent copy not found', { grant_id: grant.id, attempts: attempt });
      throw new ProviderError(
        `The message was sent, but provider B has not shown its Sent copy (${internetMessageId}) yet; find it in the Sent folder, do not send it again`,
      );
    }
    await sleepFor(delay);
  }
}

/** Hands a prepared message to Graph (which delivers it and keeps the Sent copy); the copy as Graph holds it. */
export async function sendThroughGraph(
  grant: GrantRecord,
  prepared: PreparedMessage,
  beforeRelay: () => void | Promise<void>,
): Promise<Message> {
  checkAttachmentSizes(prepared.attachments);
  const domain = grant.email.slice(grant.email.lastIndexOf('@') + 1);
  const messageId = `<${newId('message').slice(4)}@${domain}>`;
  const date = new Date(clock.nowMs());
  const tracking = liveTracking(grant, prepared.tracking);
  /** The Sent copy, once its tracking (if any) is recorded under its ID. */
  const tracked = async (sent: Message, header: string) => {
    if (tracking) await recordLiveTracking(grant, tracking, { ...sent, message_id_header: header });
    return sent;
  };
  // Attachments alone too large for one request (twice base64: as MIME, then the MIME for Graph) go
  // to the draft without composing the whole message: a large file is then held once, never as MIME too.
  const attachmentsAlone = prepared.attachments.reduce((n, a) => n + (Math.ceil(a.content.length / 3) * 16) / 9, 0);
  const whole =
    attachmentsAlone <= MIME_REQUEST_MAX
      ? (await composePrepared(prepared, messageId, date, tracking)).toString('base64')
      : undefined;
  const client = await graphClientOf(grant);
  if (whole !== undefined && whole.length <= MIME_REQUEST_MAX) {
    await beforeRelay();
    await client.call({ method: 'POST', path: `${client.mailbox}/sendMail`, body: whole, contentType: 'text/plain' });
    return tracked(await sentCopy(grant, client, messageId), messageId);
  }
  // Too large for one request: a draft from the MIME without its attachments, the attachments added, then sent.
  const bare = (await composePrepared({ ...prepared, attachments: [] }, messageId, date, tracking)).toString('base64');
  if (bare.length > MIME_REQUEST_MAX)
    throw new InvalidRequestError(
      `The message without its attachments is ${bare.length} bytes as base64 MIME; provider B takes at most ${MIME_REQUEST_MAX} (Graph's limit): shorten its body`,
    );
  const draft = await client.call<GraphMessage>({
    method: 'POST',
    path: `${client.mailbox}/messages`,
    body: bare,
    contentType: 'text/plain',
  });
  try {
    await addAttachments(client, draft.id, prepared.attachments);
  } catch (error) {
    // Nothing was sent: the half-built draft is not left in the account's Drafts.
    await client.call({ method: 'DELETE', path: messagePath(client, draft.id) }).catch(() => undefined);
    throw error;
  }
  await beforeRelay();
  await client.call({ method: 'POST', path: `${messagePath(client, draft.id)}/send` });
  const header = draft.internetMessageId ?? messageId;
  return tracked(await sentCopy(grant, client, header), header);
}

/**
 * Mail from a microsoft grant's own address that the API sends on its behalf (the scheduler's booking
 * mails, with their invitations): sent through Graph as MIME, its calendar part kept, and Graph keeps
 * the Sent copy, as a message the grant sends through the API is. A refusal by rules, policy or Graph
 * itself (a 4xx other than a rate limit) drops the mail, logged; a rate limit, a 5xx or an unreachable
 * Graph throws so the job is tried again.
 */
export const graphAccountMail: AccountMail = {
  async send(grant, mail, what) {
    try {
      const prepared = {
        ...(await prepareOutgoing(grant, { to: mail.to, subject: mail.subject, body: mail.body })),
        ...(mail.calendar ? { calendar: mail.calendar } : {}),
      };
      await sendThroughGraph(grant, prepared, () => undefined);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500 || error.status === 429) throw error;
      logger.warn('mail not sent', { grant_id: grant.id, what, reason: error.message });
    }
  },
};
