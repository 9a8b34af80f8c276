import { randomBytes } from 'node:crypto';
import { attachmentsWithContents, storedBody } from '#shared/mailbox/blobs';
import { removeContentsNow } from '#shared/mailbox/cleanup';
import { draftContentsRemoval, draftOutbox, requireUnscheduledDraft } from '#shared/mailbox/drafts';
import { deliverAndStore, prepareOutgoing, type OutgoingInput, type SendClaim } from '#shared/mailbox/send';
import { viewOf } from '#shared/mailbox/store';
import type { DraftRecord } from '#shared/mailbox/types';
import * as drafts from '#shared/db/drafts';
import type { GrantRecord } from '#shared/db/grants';
import { draftKey } from '#shared/db/keys';
import type { OutboxEntry } from '#shared/db/outbox';
import { getRecord } from '#shared/db/records';
import { ConflictError, NotFoundError } from '#shared/errors';
import { clock } from '#shared/time';

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
    // Stored canonical: prepareOutgoing reads them again as a send's (rules 1, 2 and 5 give the same settings).
    tracking_options: draft.tracking_options,
  };
}

/** A draft's claim for its send, with the job that removes its contents once it is sent. */
export interface DraftClaim extends SendClaim {
  removal: OutboxEntry;
}

/**
 * Claims a draft for its send (see claimsOf in shared/mailbox/send.ts): its item is marked with the
 * claim, conditional on the version read and on no other send's live claim, so two concurrent sends
 * deliver it once. The Sent copy's transaction deletes it (with its count, thread entry, and the job
 * that removes its contents); until then it stays where it is. A send that dies before its commit
 * leaves the draft claimed until the claim lapses, then it can be sent again: nothing is put back.
 */
export function draftClaim(grant: GrantRecord, draft: DraftRecord): DraftClaim {
  const claim = randomBytes(8).toString('hex');
  const removal = draftContentsRemoval(grant, draft);
  return {
    removal,
    take: (until) => drafts.draftClaimItems(draft, claim, until),
    async refused(error) {
      if (!error.has('draft')) return error;
      const still = await getRecord<DraftRecord>(draftKey(grant.id, draft.id));
      // Sent meanwhile, or being sent: for this request the draft is gone, as it will be.
      if (!still) return new NotFoundError(`Draft '${draft.id}' not found`);
      if ((still.send_claim_until ?? 0) >= clock.nowSeconds())
        return new NotFoundError(`Draft '${draft.id}' not found: another request is sending it`);
      return new ConflictError(
        'The draft was changed by another request while it was being sent; fetch it again and retry',
      );
    },
    convert: () => ({ items: drafts.draftSentItems(draft, claim), outbox: [...draftOutbox(grant, draft), removal] }),
    giveUp: () => drafts.releaseDraftClaim(draft, claim),
  };
}

/**
 * Sends a draft as a message (an optional signature is appended); the transaction that stores the
 * Sent copy deletes the draft and counts the quota unit its claims held.
 */
export async function sendDraft(grant: GrantRecord, draftId: string, body: { signature_id?: string }) {
  const draft = await requireUnscheduledDraft(grant, draftId, 'sent');
  const attachments = await attachmentsWithContents(draft.attachments);
  // No template: a draft was rendered when written, so its send needs no template engine.
  const prepared = await prepareOutgoing(grant, await outgoingOfDraft(draft, body), [], attachments);
  const claim = draftClaim(grant, draft);
  // Storing the sent message refreshes its thread, which no longer lists the draft deleted with it.
  const message = await deliverAndStore(grant, prepared, undefined, [], { claim });
  await removeContentsNow(claim.removal);
  return viewOf(message);
}
