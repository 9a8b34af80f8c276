import { kinds } from '#shared/db/postings';
import type { DraftRecord } from '#shared/db/mail-records';
import { TABLE_NAME, type TransactItem } from '#shared/aws/dynamodb';
import { batchGet } from '#shared/db/batch';
import { draftKey, itemAttributes, postingKey } from '#shared/db/keys';
import { folderCounter } from '#shared/db/messages';
import { RecordExistsError, VersionConflictError } from '#shared/db/records';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { TransactionConditionError, transactWrite, type NamedItems } from '#shared/db/transact';
import type { DraftId, GrantId } from '#shared/ids';

/**
 * A draft's item, the Drafts folder's count and the draft's entry in its thread's draft postings
 * change together, in one transaction, so the count never drifts from the drafts stored.
 */
const DRAFTS_FOLDER = 'drafts';

const threadPosting = (draft: DraftRecord) => (draft.thread_id ? postingKey(draft.grant_id, kinds.draftThread(draft.thread_id), draft.id) : undefined);

/** Whether the transaction went through; false when the draft item's own condition failed. */
async function transact(items: NamedItems): Promise<boolean> {
  try {
    await transactWrite(items);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('draft')) return false;
    throw error;
  }
}

const counter = (draft: DraftRecord, total: number): [string, TransactItem] => ['drafts_folder', folderCounter(draft.grant_id, { folderId: DRAFTS_FOLDER, total, unread: 0 })];

/** The items that store a new draft: itself (its ID not taken), the Drafts count, its thread entry. */
export function draftInsertItems(draft: DraftRecord): NamedItems {
  const posting = threadPosting(draft);
  return [
    ['draft', { Put: { TableName: TABLE_NAME, Item: { ...draftKey(draft.grant_id, draft.id), ...draft }, ConditionExpression: 'attribute_not_exists(pk)' } }],
    counter(draft, 1),
    ...(posting ? [['thread_posting', { Put: { TableName: TABLE_NAME, Item: { ...posting } } }] as [string, TransactItem]] : []),
  ];
}

/** The items that remove an existing draft (it must exist): itself, the Drafts count, its thread entry. */
export function draftRemoveItems(draft: DraftRecord, expectedVersion?: number): NamedItems {
  const posting = threadPosting(draft);
  return [
    [
      'draft',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: draftKey(draft.grant_id, draft.id),
          ConditionExpression: expectedVersion === undefined ? 'attribute_exists(pk)' : 'version = :v',
          ExpressionAttributeValues: expectedVersion === undefined ? undefined : { ':v': expectedVersion },
        },
      },
    ],
    counter(draft, -1),
    ...(posting ? [['thread_posting', { Delete: { TableName: TABLE_NAME, Key: posting } }] as [string, TransactItem]] : []),
  ];
}

/** Stores a new draft (or puts one back); RecordExistsError if its ID is taken. */
export async function insertDraft(draft: DraftRecord, outbox: readonly OutboxEntry[] = [], also: NamedItems = []): Promise<void> {
  const stored = await transact([...also, ...draftInsertItems(draft), ...outboxItems(outbox)]);
  if (!stored) throw new RecordExistsError();
}

/**
 * Replaces a draft with its next version, conditional on the version read (VersionConflictError
 * otherwise), with what the change commits (removing the contents it replaced).
 */
export async function replaceDraft(current: DraftRecord, next: DraftRecord, outbox: readonly OutboxEntry[] = [], also: NamedItems = []): Promise<void> {
  const replaced = await transact([
    ...also,
    [
      'draft',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...draftKey(next.grant_id, next.id), ...next },
          ConditionExpression: 'version = :v',
          ExpressionAttributeValues: { ':v': current.version },
        },
      },
    ],
    ...outboxItems(outbox),
  ]);
  if (!replaced) throw new VersionConflictError();
}

/**
 * Removes a draft; false if it did not exist. With `expectedVersion`, only that version is removed
 * (VersionConflictError if it exists with another). `also`: items committed with the removal.
 */
export async function removeDraft(draft: DraftRecord, expectedVersion?: number, outbox: readonly OutboxEntry[] = [], also: NamedItems = []): Promise<boolean> {
  const removed = await transact([...also, ...draftRemoveItems(draft, expectedVersion), ...outboxItems(outbox)]);
  if (removed || expectedVersion === undefined) return removed;
  throw new VersionConflictError();
}

/** Drafts by ID, in one batch read; IDs that do not exist are left out. */
export async function getDrafts(grantId: GrantId, ids: string[]): Promise<DraftRecord[]> {
  if (!ids.length) return [];
  return (await batchGet(ids.map((id) => draftKey(grantId, id as DraftId)))).map((item) => itemAttributes<DraftRecord>(item));
}
