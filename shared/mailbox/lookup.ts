import { presignedDownload, storedBody } from '#shared/mailbox/blobs';
import { planContent, type ContentPlan } from '#shared/mailbox/content';
import type { DraftRecord, MessageRecord } from '#shared/mailbox/types';
import { draftView } from '#shared/mailbox/views';
import { draftKey } from '#shared/db/keys';
import { getRecord } from '#shared/db/records';
import type { GrantRecord } from '#shared/db/grants';
import { getMessage } from '#shared/db/messages';
import { NotFoundError } from '#shared/errors';
import { ANSWER_BUDGET_BYTES, jsonBytes } from '#shared/answer-limits';
import { parseId, type DraftId, type GrantId } from '#shared/ids';

/** A message of the grant by ID, or 404 (malformed IDs never reach the database). */
export async function requireMessage(grant: GrantRecord, messageId: string): Promise<MessageRecord> {
  const id = parseId('message', messageId);
  const record = id ? await getMessage(grant.id, id) : undefined;
  if (!record) throw new NotFoundError(`Message '${messageId}' not found`);
  return record;
}

/** A draft of the grant by ID, or 404 (malformed IDs never reach the database). */
export async function requireDraft(grant: GrantRecord, draftId: string): Promise<DraftRecord> {
  const id = parseId('draft', draftId);
  const record = id ? await getRecord<DraftRecord>(draftKey(grant.id, id)) : undefined;
  if (!record) throw new NotFoundError(`Draft '${draftId}' not found`);
  return record;
}

/** What the view of a draft will carry, from its recorded body size, before anything is read from S3. */
export function draftContentPlan(draft: DraftRecord): ContentPlan {
  return planContent({
    base: jsonBytes(draftView(draft, '')),
    body: draft.body_key ? draft.body_size : Buffer.byteLength(draft.body ?? ''),
  });
}

/**
 * The API object of a draft (its body may live in S3). A body the answer cannot carry is served
 * from a short-lived URL (`body_url`) instead.
 */
export async function draftObject(draft: DraftRecord, plan = draftContentPlan(draft)) {
  const url = () =>
    presignedDownload(
      draft.body_key!,
      draft.is_plaintext ? 'body.txt' : 'body.html',
      draft.is_plaintext ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8',
    );
  if (plan.moveBody && draft.body_key) return draftView(draft, '', { body_url: await url() });
  const view = draftView(draft, await storedBody(draft));
  // Older drafts have no recorded size: measured here instead.
  return jsonBytes(view) > ANSWER_BUDGET_BYTES && draft.body_key
    ? draftView(draft, '', { body_url: await url() })
    : view;
}

/** The API object of a draft by ID, or undefined. */
export async function loadDraftView(grantId: GrantId, draftId: string) {
  const draft = await getRecord<DraftRecord>(draftKey(grantId, draftId as DraftId));
  return draft ? draftObject(draft) : undefined;
}
