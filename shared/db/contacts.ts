import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { batchGet } from '#shared/db/batch';
import {
  contactGroupKey,
  contactGroupNameKey,
  contactGroupsOfGrant,
  contactKey,
  contactsOfGrant,
  itemAttributes,
} from '#shared/db/keys';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { queryAll } from '#shared/db/records';
import { TransactionConditionError, transactWrite, type NamedTransactItem } from '#shared/db/transact';
import type { ContactGroupId, ContactId, GrantId } from '#shared/ids';
import type { CreateContactBody } from '#schemas/contact';

/**
 * Contacts a grant's storage keeps: its address book (`address_book`: created, changed and deleted
 * through the API) and the people its mail collected (`inbox`: one item per address, its ID derived
 * from the address, so collecting the same address twice writes one item). Groups sit in a partition
 * of their own, with a name guard per parent (`name#<parent>#<lowercased name>`) that keeps sibling
 * names unique. Every change is committed with its notification.
 */
export type ContactSource = 'address_book' | 'inbox';
export type ContactData = Omit<CreateContactBody, 'groups'>;

export interface ContactRecord extends ContactData {
  id: ContactId;
  grant_id: GrantId;
  source: ContactSource;
  /** IDs of the groups it belongs to (a group deleted since is left out of answers). */
  group_ids: ContactGroupId[];
  /** Lowercased addresses and phone digits: what the list filters match. */
  email_index: string[];
  phone_index: string[];
  /** Inbox contacts: the display name their addresses last came with (names are derived from it). */
  seen_name?: string;
  /** CardDAV address books (shared/dav/contacts.ts): the vCard's URL, its ETag and its UID. */
  href?: string;
  etag?: string;
  vcard_uid?: string;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface ContactGroupRecord {
  id: ContactGroupId;
  grant_id: GrantId;
  name: string;
  parent_id?: ContactGroupId;
  /** CardDAV address books (shared/dav/contacts.ts): the group vCard's URL, ETag, UID and the UIDs of its members. */
  href?: string;
  etag?: string;
  vcard_uid?: string;
  member_uids?: string[];
  created_at: number;
  updated_at: number;
  version: number;
}

const CONTACT = 'contact';
const GROUP = 'contact_group';
const GROUP_NAME = 'contact_group_name';

export class ContactChangedError extends Error {
  constructor() {
    super('The contact changed meanwhile');
    this.name = 'ContactChangedError';
  }
}
export class GroupMissingError extends Error {
  constructor(readonly groupId: string) {
    super(`Contact group '${groupId}' does not exist`);
    this.name = 'GroupMissingError';
  }
}
export class GroupNameTakenError extends Error {
  constructor() {
    super('A sibling group already has this name');
    this.name = 'GroupNameTakenError';
  }
}

const toContact = (item: Record<string, unknown>) => itemAttributes<ContactRecord>(item, 'entity');
const toGroup = (item: Record<string, unknown>) => itemAttributes<ContactGroupRecord>(item, 'entity');

/** The address book's copy first: an ID is in one partition or the other. */
export async function getContact(grantId: GrantId, id: ContactId): Promise<ContactRecord | undefined> {
  const [item] = await batchGet([contactKey(grantId, 'address_book', id), contactKey(grantId, 'inbox', id)]);
  return item ? toContact(item) : undefined;
}

/** Inbox contacts by ID (missing ones left out). */
export async function getInboxContacts(grantId: GrantId, ids: readonly ContactId[]): Promise<ContactRecord[]> {
  return (await batchGet(ids.map((id) => contactKey(grantId, 'inbox', id)))).map(toContact);
}

/** The contact's groups must exist when it is written (checked in the same transaction). */
const groupChecks = (grantId: GrantId, groupIds: readonly ContactGroupId[]): NamedTransactItem[] =>
  groupIds.map((id) => [
    `group:${id}`,
    {
      ConditionCheck: {
        TableName: TABLE_NAME,
        Key: contactGroupKey(grantId, id),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
  ]);

function missingGroup(error: unknown, groupIds: readonly ContactGroupId[]): GroupMissingError | undefined {
  if (!(error instanceof TransactionConditionError)) return undefined;
  const missing = groupIds.find((id) => error.has(`group:${id}`));
  return missing ? new GroupMissingError(missing) : undefined;
}

const contactPut = (
  record: ContactRecord,
  condition: Pick<NonNullable<TransactItem['Put']>, 'ConditionExpression' | 'ExpressionAttributeValues'>,
): TransactItem => ({
  Put: {
    TableName: TABLE_NAME,
    Item: { ...contactKey(record.grant_id, record.source, record.id), entity: CONTACT, ...record },
    ...condition,
  },
});

export async function insertContact(record: ContactRecord, outbox: readonly OutboxEntry[]): Promise<void> {
  try {
    await transactWrite([
      ['contact', contactPut(record, { ConditionExpression: 'attribute_not_exists(pk)' })],
      ...groupChecks(record.grant_id, record.group_ids),
      ...outboxItems(outbox),
    ]);
  } catch (error) {
    throw missingGroup(error, record.group_ids) ?? error;
  }
}

/** Replaces a contact with its next version (ContactChangedError when another change came first). */
export async function replaceContact(
  current: ContactRecord,
  next: ContactRecord,
  outbox: readonly OutboxEntry[],
): Promise<void> {
  try {
    await transactWrite([
      [
        'contact',
        contactPut(next, { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': current.version } }),
      ],
      ...groupChecks(next.grant_id, next.group_ids),
      ...outboxItems(outbox),
    ]);
  } catch (error) {
    const missing = missingGroup(error, next.group_ids);
    if (missing) throw missing;
    if (error instanceof TransactionConditionError && error.has('contact')) throw new ContactChangedError();
    throw error;
  }
}

/** False when it was gone already (or changed meanwhile). */
export async function deleteContact(record: ContactRecord, outbox: readonly OutboxEntry[]): Promise<boolean> {
  try {
    await transactWrite([
      [
        'contact',
        {
          Delete: {
            TableName: TABLE_NAME,
            Key: contactKey(record.grant_id, record.source, record.id),
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': record.version },
          },
        },
      ],
      ...outboxItems(outbox),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('contact')) return false;
    throw error;
  }
}

/**
 * A page of one source's contacts in ID order (creation order for the address book) after the sort
 * key `after`, keeping those `keep` accepts: reads on until the page is full or the partition ends.
 * `last` is set when more may follow.
 */
export async function pageOfContacts(
  grantId: GrantId,
  source: ContactSource,
  options: { limit: number; after?: string; keep: (record: ContactRecord) => boolean },
): Promise<{ items: ContactRecord[]; last?: string }> {
  const items: ContactRecord[] = [];
  let start: Record<string, unknown> | undefined = options.after
    ? { pk: contactsOfGrant(grantId, source), sk: options.after }
    : undefined;
  for (;;) {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': contactsOfGrant(grantId, source) },
        ExclusiveStartKey: start,
        Limit: Math.max(options.limit + 1, 100),
      }),
    );
    for (const item of page.Items ?? []) {
      const record = toContact(item);
      if (!options.keep(record)) continue;
      if (items.length === options.limit) return { items, last: items.at(-1)!.id };
      items.push(record);
    }
    start = page.LastEvaluatedKey;
    if (!start) return { items };
  }
}

/**
 * Writes collected inbox contacts: a new one only if its address is still unknown, a known one only
 * if it is still the version read. A write that meets another collector's is skipped: that one wrote
 * the same address, and the next message carrying it collects again.
 */
export async function writeInboxContact(record: ContactRecord, previousVersion: number | undefined): Promise<boolean> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...contactKey(record.grant_id, 'inbox', record.id), entity: CONTACT, ...record },
        ...(previousVersion === undefined
          ? { ConditionExpression: 'attribute_not_exists(pk)' }
          : { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': previousVersion } }),
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

// ---- groups ----

/** Every group of a grant (a handful: read whole). */
export async function allContactGroups(grantId: GrantId): Promise<ContactGroupRecord[]> {
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: 'entity = :e',
    ExpressionAttributeValues: { ':pk': contactGroupsOfGrant(grantId), ':e': GROUP },
    ConsistentRead: true,
  });
  return items.map(toGroup);
}

const groupItems = (group: ContactGroupRecord): NamedTransactItem[] => [
  [
    'group',
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...contactGroupKey(group.grant_id, group.id), entity: GROUP, ...group },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ],
  [
    'name',
    {
      Put: {
        TableName: TABLE_NAME,
        Item: {
          ...contactGroupNameKey(group.grant_id, group.parent_id, group.name),
          entity: GROUP_NAME,
          group_id: group.id,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ],
];

const parentCheck = (group: ContactGroupRecord): NamedTransactItem[] =>
  group.parent_id
    ? [
        [
          'parent',
          {
            ConditionCheck: {
              TableName: TABLE_NAME,
              Key: contactGroupKey(group.grant_id, group.parent_id),
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
        ],
      ]
    : [];

export async function insertContactGroup(group: ContactGroupRecord): Promise<void> {
  try {
    await transactWrite([...groupItems(group), ...parentCheck(group)]);
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('name')) throw new GroupNameTakenError();
    if (error instanceof TransactionConditionError && error.has('parent'))
      throw new GroupMissingError(group.parent_id!);
    throw error;
  }
}

/** Renames a group (its name guard moves with it); false when it changed or went meanwhile. */
export async function renameContactGroup(current: ContactGroupRecord, next: ContactGroupRecord): Promise<boolean> {
  const sameGuard = current.name.trim().toLowerCase() === next.name.trim().toLowerCase();
  try {
    await transactWrite([
      [
        'group',
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...contactGroupKey(next.grant_id, next.id), entity: GROUP, ...next },
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': current.version },
          },
        },
      ],
      ...(sameGuard
        ? []
        : ([
            [
              'old-name',
              {
                Delete: {
                  TableName: TABLE_NAME,
                  Key: contactGroupNameKey(current.grant_id, current.parent_id, current.name),
                },
              },
            ],
            groupItems(next)[1]!,
          ] as NamedTransactItem[])),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('name')) throw new GroupNameTakenError();
    if (error instanceof TransactionConditionError && error.has('group')) return false;
    throw error;
  }
}

/** Deletes a group and its name guard; false when it changed or went meanwhile. */
export async function deleteContactGroup(group: ContactGroupRecord): Promise<boolean> {
  try {
    await transactWrite([
      [
        'group',
        {
          Delete: {
            TableName: TABLE_NAME,
            Key: contactGroupKey(group.grant_id, group.id),
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: { ':v': group.version },
          },
        },
      ],
      [
        'name',
        { Delete: { TableName: TABLE_NAME, Key: contactGroupNameKey(group.grant_id, group.parent_id, group.name) } },
      ],
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionConditionError && error.has('group')) return false;
    throw error;
  }
}

// ---- CardDAV address books (shared/dav/contacts.ts) ----

/** Every contact of one source of a grant (a CardDAV sync compares them with the server's). */
export async function allContacts(grantId: GrantId, source: ContactSource): Promise<ContactRecord[]> {
  const { items } = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': contactsOfGrant(grantId, source) },
    ConsistentRead: true,
  });
  return items.map(toContact);
}

/**
 * Writes a group mirrored from a CardDAV server: new (`current` undefined) or the next version of
 * `current`. No name guard: a server may hold two groups of one name. False when it was written
 * (or changed) meanwhile.
 */
export async function putSyncedContactGroup(
  next: ContactGroupRecord,
  current: ContactGroupRecord | undefined,
): Promise<boolean> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...contactGroupKey(next.grant_id, next.id), entity: GROUP, ...next },
        ...(current
          ? { ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': current.version } }
          : { ConditionExpression: 'attribute_not_exists(pk)' }),
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** Removes a group mirrored from a CardDAV server; false when it changed or went meanwhile. */
export async function removeSyncedContactGroup(group: ContactGroupRecord): Promise<boolean> {
  try {
    await dynamo.send(
      new DeleteCommand({
        TableName: TABLE_NAME,
        Key: contactGroupKey(group.grant_id, group.id),
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': group.version },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
