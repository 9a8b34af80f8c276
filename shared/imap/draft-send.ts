import { attachmentsWithContents } from '#shared/mailbox/blobs';
import { removeContentsNow } from '#shared/mailbox/cleanup';
import { draftClaim, outgoingOfDraft } from '#shared/mailbox/draft-send';
import { requireUnscheduledDraft } from '#shared/mailbox/drafts';
import { claimsOf, prepareOutgoing } from '#shared/mailbox/send';
import { messageView } from '#shared/mailbox/views';
import type { GrantRecord } from '#shared/db/grants';
import { transactWrite } from '#shared/db/transact';
import { serverDrafts } from '#shared/imap/drafts';
import { submitAndStore } from '#shared/imap/submit';
import { logger } from '#shared/logger';
import type { DraftSendingProvider } from '#shared/providers/contract';

const log = logger.child({ module: 'imap-draft-send' });

/**
 * Sending an IMAP grant's draft: sent as any message of the grant is (shared/imap/send.ts: its own
 * SMTP server, the copy APPENDed to Sent, message.created), under a Message-ID of its own (the
 * draft's copy keeps its header until it is deleted, so the two are never taken for one message).
 * The draft is claimed right before the submission, as an Agent Account's is (no quota here), and
 * deleted by the transaction that stores the Sent copy; a server's refusal gives the claim up, a
 * send that dies lets it lapse. Once sent, its copy leaves the server's Drafts folder. The mail went
 * out by then: a copy that cannot be deleted is logged and left (the sync never takes it for mail),
 * and the send still answers.
 */
async function sendImapDraft(grant: GrantRecord, draftId: string, body: { signature_id?: string }) {
  const draft = await requireUnscheduledDraft(grant, draftId, 'sent');
  const attachments = await attachmentsWithContents(draft.attachments);
  // No template: a draft was rendered when written.
  const prepared = await prepareOutgoing(grant, await outgoingOfDraft(draft, body), [], attachments);
  const claim = draftClaim(grant, draft);
  const record = await submitAndStore(grant, prepared, { claims: claimsOf(grant, undefined, claim) });
  await removeContentsNow(claim.removal);
  try {
    const items = await serverDrafts(grant).remove(draft);
    if (items.length) await transactWrite(items);
  } catch (error) {
    log.warn("a sent draft's copy stays in the server's Drafts folder", {
      grant_id: grant.id,
      draft_id: draft.id,
      reason: (error as Error).message,
    });
  }
  return messageView(record, { body: prepared.body });
}

export const imapDraftSending: DraftSendingProvider = { send: sendImapDraft };
