import { storedBody } from '#shared/agent/blobs';
import type { DraftRecord, MessageRecord } from '#shared/agent/types';
import { draftView } from '#shared/agent/views';
import { draftKey } from '#shared/db/keys';
import { getRecord } from '#shared/db/records';
import type { GrantRecord } from '#shared/db/grants';
import { getMessage } from '#shared/db/messages';
import { NotFoundError } from '#shared/http/errors';
import { parseId, type DraftId, type GrantId } from '#shared/ids';

/** A message of the grant by ID, or 404 (malformed IDs never reach the database). */
export async function requireMessage(grant: GrantRecord, messageId: string): Promise<MessageRecord> {
  const id = parseId('message', messageId);
  const record = id ? await getMessage(grant.id, id) : undefined;
  if (!record) throw new NotFoundError(`Message '${messageId}' not found`);
  return record;
}

/** The API object of a draft (its body may live in S3). */
export async function draftObject(draft: DraftRecord) {
  return draftView(draft, await storedBody(draft));
}

/** The API object of a draft by ID, or undefined. */
export async function loadDraftView(grantId: GrantId, draftId: string) {
  const draft = await getRecord<DraftRecord>(draftKey(grantId, draftId as DraftId));
  return draft ? draftObject(draft) : undefined;
}
