import type { CreateDraftBody, ListDraftsQuery, SendDraftBody, UpdateDraftBody } from '#schemas/mail';
import { composePrepared, prepareOutgoing, type OutgoingInput } from '#shared/mailbox/send';
import { gmailMessagePayload } from '#shared/google/submit';
import type { NewAttachment } from '#shared/mailbox/types';
import { decodeProviderCursor, encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { draftFromGmail, type GmailMessage, type GmailPart } from '#shared/google/gmail-message';
import { gmailListing } from '#shared/google/gmail-query';
import { gmailMessages } from '#shared/google/messages';
import { repliedOnGmail } from '#shared/google/replied';
import { newId } from '#shared/ids';
import { inPool } from '#shared/pool';
import { MAX_BATCH } from '#shared/google/batch';
import type { Draft, DraftSendingProvider, DraftsProvider, Message, Page } from '#shared/providers/contract';
import { renderStoredTemplate } from '#shared/templates/templates';
import type { UploadedFile } from '#shared/uploaded-file';
import { clock } from '#shared/time';

/**
 * Provider A's drafts, live: Gmail's own drafts (users.drafts), their IDs Gmail's. A draft is
 * composed as every outgoing message is (shared/mailbox/send.ts prepareOutgoing, recipients not yet
 * required) and handed to Gmail as MIME. A change recomposes the draft from what it holds and what
 * the body names (fields given replace, the rest are kept, attachments too, read back from Gmail),
 * and Gmail keeps the draft's ID. Sending is Gmail's drafts.send: the answer is the sent message.
 */

const SCOPE = 'gmail-drafts';
/** Drafts read at once: one batch. */
const GET_CONCURRENCY = MAX_BATCH;
const DRAFTS = '/gmail/v1/users/me/drafts';

interface GmailDraft {
  id: string;
  message?: GmailMessage;
}

const draftPath = (id: string) => {
  if (!/^[0-9A-Za-z_-]{1,128}$/.test(id)) throw new NotFoundError(`No draft '${id}' in this grant's mailbox`);
  return `${DRAFTS}/${id}`;
};

async function readDraft(client: GoogleClient, id: string): Promise<GmailDraft> {
  try {
    return await client.call<GmailDraft>({
      api: 'gmail',
      path: draftPath(id),
      query: { format: 'full' },
      batch: true,
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No draft '${id}' in this grant's mailbox`);
    throw error;
  }
}

const draftOf = (grant: GrantRecord, draft: GmailDraft): Draft =>
  draftFromGmail(grant, draft.id, draft.message ?? { id: '', threadId: '' });

/** The MIME of a draft, as Gmail's Message resource to send with drafts.create / update. */
async function composed(
  grant: GrantRecord,
  input: OutgoingInput,
  files: UploadedFile[],
  kept: NewAttachment[],
): Promise<{ raw: Buffer; threadId?: string }> {
  const prepared = await prepareOutgoing(grant, input, files, kept, renderStoredTemplate, repliedOnGmail, {
    draft: true,
  });
  const domain = grant.email.slice(grant.email.lastIndexOf('@') + 1);
  const raw = await composePrepared(prepared, `<${newId('draft').slice(4)}@${domain}>`, new Date(clock.nowMs()));
  return { raw, ...(prepared.threadId ? { threadId: prepared.threadId } : {}) };
}

/** The attachments a draft holds now, with their contents (kept when a change names no attachments). */
async function keptAttachments(client: GoogleClient, message: GmailMessage): Promise<NewAttachment[]> {
  const leaves = (p: GmailPart | undefined): GmailPart[] => (p?.parts?.length ? p.parts.flatMap(leaves) : p ? [p] : []);
  const parts = leaves(message.payload).filter((p) => p.filename && (p.body?.attachmentId || p.body?.data));
  return Promise.all(
    parts.map(async (p) => {
      const data =
        p.body?.data ??
        (
          await client.call<{ data?: string }>({
            api: 'gmail',
            path: `/gmail/v1/users/me/messages/${message.id}/attachments/${encodeURIComponent(p.body!.attachmentId!)}`,
          })
        ).data ??
        '';
      const header = (name: string) => p.headers?.find((h) => h.name?.toLowerCase() === name)?.value;
      const contentId = header('content-id')?.replace(/^<|>$/g, '');
      return {
        filename: p.filename!,
        contentType: p.mimeType ?? 'application/octet-stream',
        content: Buffer.from(data, 'base64url'),
        inline: (header('content-disposition') ?? '').toLowerCase().startsWith('inline'),
        ...(contentId ? { contentId } : {}),
      };
    }),
  );
}

/** What a draft holds, as the body that would create it again (its attachments apart). */
function inputOf(draft: Draft): OutgoingInput {
  return {
    to: draft.to,
    cc: draft.cc,
    bcc: draft.bcc,
    reply_to: draft.reply_to,
    ...(draft.subject !== undefined ? { subject: draft.subject } : {}),
    ...(draft.body !== undefined ? { body: draft.body } : {}),
  };
}

async function list(grant: GrantRecord, query: ListDraftsQuery, limit: number): Promise<Page<Draft>> {
  const { thread_id: threadId, metadata_pair: metadata, query_imap: imap, ...filters } = query;
  if (metadata !== undefined) throw new InvalidRequestError("'metadata_pair' is not available for google grants yet");
  if (imap !== undefined) throw new InvalidRequestError("'query_imap' applies to IMAP grants");
  const listing = gmailListing(filters);
  const client = await googleClientOf(grant);
  const page = await client.call<{ drafts?: GmailDraft[]; nextPageToken?: string }>({
    api: 'gmail',
    path: DRAFTS,
    query: {
      maxResults: limit,
      ...(listing.q !== undefined ? { q: listing.q } : {}),
      ...(query.page_token ? { pageToken: decodeProviderCursor(query.page_token, SCOPE) } : {}),
    },
  });
  const wanted = (page.drafts ?? []).filter((d) => threadId === undefined || d.message?.threadId === threadId);
  const byId = new Map<string, Draft>();
  await inPool(wanted, GET_CONCURRENCY, async ({ id }) => {
    try {
      byId.set(id, draftOf(grant, await readDraft(client, id)));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
    }
  });
  return {
    items: wanted.flatMap(({ id }) => byId.get(id) ?? []),
    ...(page.nextPageToken ? { nextCursor: encodeProviderCursor(SCOPE, page.nextPageToken) } : {}),
  };
}

async function get(grant: GrantRecord, draftId: string): Promise<Draft> {
  return draftOf(grant, await readDraft(await googleClientOf(grant), draftId));
}

async function create(grant: GrantRecord, body: CreateDraftBody, files: UploadedFile[]): Promise<Draft> {
  const client = await googleClientOf(grant);
  const { raw, ...fields } = await composed(grant, body, files, []);
  const created = await client.call<GmailDraft>({
    api: 'gmail',
    method: 'POST',
    path: DRAFTS,
    ...gmailMessagePayload(raw, fields, (message) => ({ message })),
  });
  return draftOf(grant, await readDraft(client, created.id));
}

/** The draft composed again from what it holds and `changes` (given fields replace, attachments kept unless replaced). */
async function recompose(
  grant: GrantRecord,
  draftId: string,
  changes: Partial<OutgoingInput>,
  files: UploadedFile[],
): Promise<Draft> {
  const client = await googleClientOf(grant);
  const current = await readDraft(client, draftId);
  const kept =
    changes.attachments === undefined && !files.length ? await keptAttachments(client, current.message!) : [];
  const input = { ...inputOf(draftOf(grant, current)), ...changes };
  const { raw, ...fields } = await composed(grant, input, files, kept);
  const threadId = current.message?.threadId ?? fields.threadId;
  await client.call<GmailDraft>({
    api: 'gmail',
    method: 'PUT',
    path: draftPath(draftId),
    ...gmailMessagePayload(raw, threadId ? { threadId } : {}, (message) => ({ id: draftId, message })),
  });
  return draftOf(grant, await readDraft(client, draftId));
}

const update = (grant: GrantRecord, draftId: string, body: UpdateDraftBody, files: UploadedFile[]) =>
  recompose(grant, draftId, body, files);

async function remove(grant: GrantRecord, draftId: string): Promise<void> {
  const client = await googleClientOf(grant);
  try {
    await client.call({ api: 'gmail', method: 'DELETE', path: draftPath(draftId) });
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No draft '${draftId}' in this grant's mailbox`);
    throw error;
  }
}

export const gmailDrafts: DraftsProvider = { list, get, create, update, delete: remove };

/** Sends a draft through Gmail (a signature named in the body is added to it first); the answer is the sent message. */
export const gmailDraftSending: DraftSendingProvider = {
  async send(grant: GrantRecord, draftId: string, body: SendDraftBody): Promise<Message> {
    const client = await googleClientOf(grant);
    const draft = draftOf(grant, await readDraft(client, draftId));
    if (!draft.to.length && !draft.cc.length && !draft.bcc.length)
      throw new InvalidRequestError(`Draft '${draftId}' has no recipient: add one in 'to', 'cc' or 'bcc' first`);
    if (body.signature_id !== undefined) await recompose(grant, draftId, { signature_id: body.signature_id }, []);
    let sent: { id: string };
    try {
      sent = await client.call<{ id: string }>({
        api: 'gmail',
        method: 'POST',
        path: `${DRAFTS}/send`,
        body: { id: draftId },
      });
    } catch (error) {
      if (error instanceof GoogleNotFoundError)
        throw new NotFoundError(`No draft '${draftId}' in this grant's mailbox`);
      throw error;
    }
    return gmailMessages.get(grant, sent.id, {});
  },
};
