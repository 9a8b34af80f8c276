import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { FolderRecord } from '#shared/db/mail-records';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { batchGet } from '#shared/db/batch';
import { folderKey, folderNameKey, foldersOfGrant, itemAttributes } from '#shared/db/keys';
import { queryAll } from '#shared/db/records';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';
import type { GrantId } from '#shared/ids';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';

/**
 * Folders of a mailbox. A folder item and its name guard share the grant's folder partition: the
 * guard (`name#<parent>#<lowercased name>`) makes sibling names unique with a conditional put.
 */
export class FolderNameTakenError extends Error {
  constructor() {
    super('A sibling folder already has this name');
    this.name = 'FolderNameTakenError';
  }
}

export class FolderChangedError extends Error {
  constructor() {
    super('The folder changed or is not empty');
    this.name = 'FolderChangedError';
  }
}

const isFolder = (item: Record<string, unknown>) => item.entity === 'folder';

function toRecord(item: Record<string, unknown>): FolderRecord {
  const rest = itemAttributes<Record<string, unknown>>(item, 'entity');
  // Folders written before optional attributes were removed rather than nulled.
  for (const field of ['parent_id', 'background_color', 'text_color']) if (rest[field] === null) delete rest[field];
  return rest as unknown as FolderRecord;
}

/** Transaction items that create a folder and its name guard (also used inside grant creation). */
export function folderPutItems(folder: FolderRecord): TransactItem[] {
  return [
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...folderKey(folder.grant_id, folder.id), entity: 'folder', ...folder },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Put: {
        TableName: TABLE_NAME,
        Item: {
          ...folderNameKey(folder.grant_id, folder.parent_id, folder.name),
          entity: 'folder_name',
          folder_id: folder.id,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ];
}

export async function insertFolder(folder: FolderRecord, outbox: readonly OutboxEntry[] = []): Promise<void> {
  const [item, name] = folderPutItems(folder);
  try {
    await transactWrite([['folder', item!], ['name', name!], ...outboxItems(outbox)]);
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('name')) throw new FolderNameTakenError();
    throw error;
  }
}

export async function getFolder(grantId: GrantId, folderId: string): Promise<FolderRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: folderKey(grantId, folderId), ConsistentRead: true }),
  );
  return Item && isFolder(Item) ? toRecord(Item) : undefined;
}

export async function getFolders(grantId: GrantId, ids: string[]): Promise<FolderRecord[]> {
  const items = await batchGet(ids.map((id) => folderKey(grantId, id)));
  return items.filter(isFolder).map(toRecord);
}

/** Every folder of a grant (a mailbox has tens of folders, not thousands: one partition read). */
export async function listFolders(grantId: GrantId): Promise<FolderRecord[]> {
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: 'entity = :folder',
    ExpressionAttributeValues: { ':pk': foldersOfGrant(grantId).pk, ':folder': 'folder' },
  });
  return items.map(toRecord);
}

/** Renames, moves or recolours a folder; the name guard moves with it. */
export async function updateFolder(
  before: FolderRecord,
  after: FolderRecord,
  outbox: readonly OutboxEntry[] = [],
): Promise<void> {
  // Optional attributes are removed when unset, never stored as null.
  const sets = ['#n = :name', 'updated_at = :now'];
  const removes: string[] = [];
  const values: Record<string, unknown> = { ':name': after.name, ':old': before.name, ':now': after.updated_at };
  for (const field of ['parent_id', 'background_color', 'text_color', 'server_path'] as const) {
    if (after[field] === undefined) removes.push(field);
    else {
      sets.push(`${field} = :${field}`);
      values[`:${field}`] = after[field];
    }
  }
  const items: [string, TransactItem][] = [
    [
      'folder',
      {
        Update: {
          TableName: TABLE_NAME,
          Key: folderKey(before.grant_id, before.id),
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: 'attribute_exists(pk) AND #n = :old',
          ExpressionAttributeNames: { '#n': 'name' },
          ExpressionAttributeValues: values,
        },
      },
    ],
  ];
  const renamed =
    before.name.trim().toLowerCase() !== after.name.trim().toLowerCase() ||
    (before.parent_id ?? undefined) !== (after.parent_id ?? undefined);
  if (renamed) {
    items.push(
      [
        'old_name',
        { Delete: { TableName: TABLE_NAME, Key: folderNameKey(before.grant_id, before.parent_id, before.name) } },
      ],
      [
        'name',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: {
              ...folderNameKey(after.grant_id, after.parent_id, after.name),
              entity: 'folder_name',
              folder_id: after.id,
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ],
    );
  }
  try {
    await transactWrite([...items, ...outboxItems(outbox)]);
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('name')) throw new FolderNameTakenError();
    if (error instanceof TransactionConditionError && error.has('folder')) throw new FolderChangedError();
    throw error;
  }
}

/** Deletes a folder that holds no messages (checked in the same transaction as the delete). */
export async function deleteFolder(folder: FolderRecord, outbox: readonly OutboxEntry[] = []): Promise<void> {
  try {
    await transactWrite([
      [
        'folder',
        {
          Delete: {
            TableName: TABLE_NAME,
            Key: folderKey(folder.grant_id, folder.id),
            ConditionExpression: 'attribute_exists(pk) AND total_count = :zero',
            ExpressionAttributeValues: { ':zero': 0 },
          },
        },
      ],
      [
        'name',
        { Delete: { TableName: TABLE_NAME, Key: folderNameKey(folder.grant_id, folder.parent_id, folder.name) } },
      ],
      ...outboxItems(outbox),
    ]);
  } catch (error) {
    if (error instanceof TransactionConditionError) throw new FolderChangedError();
    throw error;
  }
}
