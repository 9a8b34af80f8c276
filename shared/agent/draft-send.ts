import { attachmentsWithContents, storedBody } from '#shared/agent/blobs';
import { removeContentsNow } from '#shared/agent/cleanup';
import { draftContentsRemoval, draftOutbox, requireUnscheduledDraft } from '#shared/agent/drafts';
import { consumeQuota, deliverAndStore, nothingLeft, prepareOutgoing, type OutgoingInput } from '#shared/agent/send';
import { viewOf } from '#shared/agent/store';
import type { DraftRecord } from '#shared/agent/types';
import * as drafts from '#shared/db/drafts';
import type { GrantRecord } from '#shared/db/grants';
import { draftKey } from '#shared/db/keys';
import { RecordExistsError, VersionConflictError, getRecord } from '#shared/db/records';
import * as sending from '#shared/db/sending';
import { ConflictError, NotFoundError } from '#shared/errors';

/** What sending a draft sends: its fields and body, with the signature asked for (else its own). */
export async function outgoingOfDraft(draft: DraftRecord, body: { signature_id?: string }): Promise<OutgoingInput> {
  const signatureId = body.signature_id ?? draft.signature_id;
  return {
    to: draft.to,
    cc: draft.cc,
    bcc: draft.bcc,
    reply_to: draft.reply_to,
    from: draft.from,
    subject: draft.subject,
    body: await storedBody(draft),
    is_plaintext: draft.is_plaintext,
    starred: draft.starred,
    reply_to_message_id: draft.reply_to_message_id,
    custom_headers: draft.custom_headers,
    metadata: draft.metadata,
    ...(signatureId ? { signature_id: signatureId } : {}),
  };
}

/**
 * Claims a draft for sending: deletes it, conditional on the version read, so two concurrent sends
 * deliver it once. Answers what puts it back as it was (with its count and thread entry) when the
 * delivery then fails; if the key is taken again, by a concurrent restore, the draft is already back.
 */
export async function claimDraft(grant: GrantRecord, draft: DraftRecord): Promise<() => Promise<void>> {
  try {
    await drafts.removeDraft(draft, draft.version, draftOutbox(grant, draft));
  } catch (error) {
    if (error instanceof VersionConflictError) {
      const still = await getRecord<DraftRecord>(draftKey(grant.id, draft.id));
      if (!still) throw new NotFoundError(`Draft '${draft.id}' not found`);
      throw new ConflictError('The draft was changed by another request while it was being sent; fetch it again and retry');
    }
    throw error;
  }
  return () =>
    drafts.insertDraft(draft, draftOutbox(grant, draft)).catch((error) => {
      if (!(error instanceof RecordExistsError)) throw error;
    });
}

/**
 * Sends a draft as a message (an optional signature is appended), then deletes the draft. The draft
 * is claimed before anything is delivered; if delivery then fails, the draft is put back.
 */
export async function sendDraft(grant: GrantRecord, draftId: string, body: { signature_id?: string }) {
  const draft = await requireUnscheduledDraft(grant, draftId, 'sent');
  const attachments = await attachmentsWithContents(draft.attachments);
  // No template: a draft was rendered when written, so its send needs no template engine.
  const prepared = await prepareOutgoing(grant, await outgoingOfDraft(draft, body), [], attachments);
  const restore = await claimDraft(grant, draft);
  const day = await consumeQuota(grant, prepared.governance.limits).catch(async (error) => {
    await restore();
    throw error;
  });
  let message;
  // The draft's contents go with the Sent copy's commit (the restored draft still needs them until then).
  const removal = draftContentsRemoval(grant, draft);
  try {
    message = await deliverAndStore(grant, prepared, undefined, [removal]);
  } catch (error) {
    if (nothingLeft(error)) await sending.refundSendQuota(grant.id, day);
    await restore();
    throw error;
  }
  // Storing the sent message refreshed its thread, which no longer lists the claimed draft.
  await removeContentsNow(removal);
  return viewOf(message);
}
