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
import { clock } from '#shared/time';

/**
 * A draft's item, the Drafts folder's count and the draft's entry in its thread's draft postings
 * change together, in one transaction, so the count never drifts from the drafts stored.
 */
const DRAFTS_FOLDER = 'drafts';

const threadPosting = (draft: DraftRecord) =>
  draft.thread_id ? postingKey(draft.grant_id, kinds.draftThread(draft.thread_id), draft.id) : undefined;

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

const counter = (draft: DraftRecord, total: number): [string, TransactItem] => [
  'drafts_folder',
  folderCounter(draft.grant_id, { folderId: DRAFTS_FOLDER, total, unread: 0 }),
];

/** The items that store a new draft: itself (its ID not taken), the Drafts count, its thread entry. */
export function draftInsertItems(draft: DraftRecord): NamedItems {
  const posting = threadPosting(draft);
  return [
    [
      'draft',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...draftKey(draft.grant_id, draft.id), ...draft },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    counter(draft, 1),
    ...(posting
      ? [['thread_posting', { Put: { TableName: TABLE_NAME, Item: { ...posting } } }] as [string, TransactItem]]
      : []),
  ];
}

/**
 * A draft being sent changes only by its send: a send claims the draft (`send_claim`, until
 * `send_claim_until`, epoch seconds), and no other write goes through while that claim is live. A
 * claim that lapsed (its send died before committing) holds nothing.
 */
const NOT_BEING_SENT = '(attribute_not_exists(send_claim_until) OR send_claim_until < :now)';

/** The draft's Drafts count and thread entry, removed with its item. */
const removedWith = (draft: DraftRecord): NamedItems => {
  const posting = threadPosting(draft);
  return [
    counter(draft, -1),
    ...(posting
      ? [['thread_posting', { Delete: { TableName: TABLE_NAME, Key: posting } }] as [string, TransactItem]]
      : []),
  ];
};

/**
 * The items that remove an existing draft (it must exist, and no send hold it): itself, the Drafts
 * count, its thread entry. With `expectedVersion`, only that version is removed.
 */
export function draftRemoveItems(draft: DraftRecord, expectedVersion?: number): NamedItems {
  return [
    [
      'draft',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: draftKey(draft.grant_id, draft.id),
          ConditionExpression: `${expectedVersion === undefined ? 'attribute_exists(pk)' : 'version = :v'} AND ${NOT_BEING_SENT}`,
          ExpressionAttributeValues: {
            ':now': clock.nowSeconds(),
            ...(expectedVersion === undefined ? {} : { ':v': expectedVersion }),
          },
        },
      },
    ],
    ...removedWith(draft),
  ];
}

/**
 * The item that claims a draft for its send until `until`: the version read (the send sends what it
 * read), and no live claim of another send. Named `draft`.
 */
export function draftClaimItems(draft: DraftRecord, claim: string, until: number): NamedItems {
  return [
    [
      'draft',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: draftKey(draft.grant_id, draft.id),
          UpdateExpression: 'SET send_claim = :claim, send_claim_until = :until',
          ConditionExpression: `version = :v AND ${NOT_BEING_SENT}`,
          ExpressionAttributeValues: {
            ':claim': claim,
            ':until': until,
            ':v': draft.version,
            ':now': clock.nowSeconds(),
          },
        },
      },
    ],
  ];
}

/** The items of the Sent copy's transaction that remove the draft it sent: the draft under this claim, its count and thread entry. */
export function draftSentItems(draft: DraftRecord, claim: string): NamedItems {
  return [
    [
      'draft',
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: draftKey(draft.grant_id, draft.id),
          ConditionExpression: 'send_claim = :claim AND version = :v',
          ExpressionAttributeValues: { ':claim': claim, ':v': draft.version },
        },
      },
    ],
    ...removedWith(draft),
  ];
}

/**
 * Gives a draft's claim up before it lapses: the relay refused the message, so the draft may be sent
 * (or changed) again at once. Only this claim (one that was taken over is left alone).
 */
export async function releaseDraftClaim(draft: DraftRecord, claim: string): Promise<void> {
  await transact([
    [
      'draft',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: draftKey(draft.grant_id, draft.id),
          UpdateExpression: 'REMOVE send_claim, send_claim_until',
          ConditionExpression: 'send_claim = :claim',
          ExpressionAttributeValues: { ':claim': claim },
        },
      },
    ],
  ]);
}

/** Stores a new draft; RecordExistsError if its ID is taken. */
export async function insertDraft(
  draft: DraftRecord,
  outbox: readonly OutboxEntry[] = [],
  also: NamedItems = [],
): Promise<void> {
  const stored = await transact([...also, ...draftInsertItems(draft), ...outboxItems(outbox)]);
  if (!stored) throw new RecordExistsError();
}

/**
 * Replaces a draft with its next version, conditional on the version read and on no send holding it
 * (VersionConflictError otherwise), with what the change commits (removing the contents it replaced).
 */
export async function replaceDraft(
  current: DraftRecord,
  next: DraftRecord,
  outbox: readonly OutboxEntry[] = [],
  also: NamedItems = [],
): Promise<void> {
  const replaced = await transact([
    ...also,
    [
      'draft',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...draftKey(next.grant_id, next.id), ...next },
          ConditionExpression: `version = :v AND ${NOT_BEING_SENT}`,
          ExpressionAttributeValues: { ':v': current.version, ':now': clock.nowSeconds() },
        },
      },
    ],
    ...outboxItems(outbox),
  ]);
  if (!replaced) throw new VersionConflictError();
}

/**
 * Removes a draft; false if it did not exist (or a send holds it). With `expectedVersion`, only that
 * version is removed (VersionConflictError otherwise). `also`: items committed with the removal.
 */
export async function removeDraft(
  draft: DraftRecord,
  expectedVersion?: number,
  outbox: readonly OutboxEntry[] = [],
  also: NamedItems = [],
): Promise<boolean> {
  const removed = await transact([...also, ...draftRemoveItems(draft, expectedVersion), ...outboxItems(outbox)]);
  if (removed || expectedVersion === undefined) return removed;
  throw new VersionConflictError();
}

/** Drafts by ID, in one batch read; IDs that do not exist are left out. */
export async function getDrafts(grantId: GrantId, ids: string[]): Promise<DraftRecord[]> {
  if (!ids.length) return [];
  return (await batchGet(ids.map((id) => draftKey(grantId, id as DraftId)))).map((item) =>
    itemAttributes<DraftRecord>(item),
  );
}
