import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_NAME, dynamo, type TransactItem } from '#shared/aws/dynamodb';
import { directIdKey, itemAttributes, mailSyncKey, serverLocationKey, serverLocationsOf } from '#shared/db/keys';
import { batchWrite } from '#shared/db/batch';
import type { ApplicationId, GrantId, MessageId } from '#shared/ids';
import { outboxItems, type OutboxEntry } from '#shared/db/outbox';
import { TransactionConditionError, transactWrite } from '#shared/db/transact';

/**
 * The sync state of a grant whose mail lives on another server (an IMAP account): one item per grant
 * holding the run lease (runs of a grant are serialized: a run takes the lease with a conditional
 * write and gives it back when it ends; a crashed run's lease lapses), when the next run is due, and
 * the checkpoint of every folder; and one location item per message per folder (folder, UIDVALIDITY,
 * UID → message), which is how server-side changes (flags, expunges) find their message.
 */

/** A folder's checkpoint: where the last run left it on the server. */
export interface FolderCheckpoint {
  /** The folder's path on the server. */
  path: string;
  /** UIDVALIDITY (a 32-bit number, kept as a string as imapflow reads it as a bigint). */
  uid_validity: string;
  /** The UID the server will give the next message: every UID below it has been seen. */
  uid_next: number;
  /** HIGHESTMODSEQ when the server has CONDSTORE: flag changes since it are all that is read. */
  highest_modseq?: string;
  /** Messages in the folder at the last run (with uid_next, an unchanged folder is skipped). */
  messages: number;
  /**
   * First sync still under way: messages with a UID below this (and inside the sync window) are yet
   * to be stored, newest first; absent once the folder is seeded.
   */
  seed_below?: number;
}

export interface MailSyncRecord {
  grant_id: GrantId;
  application_id: ApplicationId;
  lease_id?: string;
  /** Epoch seconds the lease lapses at. */
  lease_until?: number;
  /** Epoch milliseconds of the next scheduled run (a queued run due at another time is stale). */
  next_due?: number;
  /** Every folder seeded once (grant.imap_sync_completed committed). */
  seeded: boolean;
  /** Consecutive failed runs (the backoff). */
  failures: number;
  /** Epoch seconds of the last change seen on the server or made through the API (how active the grant is). */
  last_change_at: number;
  last_run_at?: number;
  /** When the provider last pushed a change of this grant (Unix seconds). */
  last_push_at?: number;
  /** Why the last run failed, if it did (a short reason, never a credential). */
  last_error?: string;
  folders: Record<string, FolderCheckpoint>;
  /** A grant with CalDAV or CardDAV servers: each collection's place in its changes (shared/dav/sync.ts). */
  dav?: DavCheckpoints;
  /** Provider A's mailbox, live (shared/google/mail-changes.ts): the Gmail history ID its changes were announced up to. */
  gmail?: {
    history_id: string;
    /**
     * Gmail's watch on the mailbox (users.watch, when the connector names a Pub/Sub topic): the topic, when
     * Gmail said it ends (Unix seconds), when it was last asked for, and why it was refused, if it was.
     */
    watch?: { topic: string; expires_at: number; renewed_at: number; error?: string };
  };
  /**
   * Provider A's calendars, live (shared/google/calendar-changes.ts): each calendar's list ETag, its
   * Calendar v3 sync token, when its events were last read (epoch ms), and its push channel.
   */
  gcal?: {
    calendars: Record<
      string,
      {
        etag: string;
        /** The token the listing under way started from (the next token replaces it at the listing's end). */
        sync_token?: string;
        /** When the last completed listing began (epoch ms): events created since are new. */
        read_at?: number;
        /** Events that listing announced created, created after it began (not new again next time). */
        created_ids?: string[];
        /** Mid-listing: where it goes on, when it began, and what it announced created so far. */
        page_token?: string;
        listing_at?: number;
        created_now?: string[];
        /** Its Calendar watch channel (shared/google/calendar-channels.ts), the token kept as a hash. */
        channel?: { id: string; resource_id: string; token_hash: string; expires_at: number };
      }
    >;
  };
  /**
   * Provider B's change notifications (shared/microsoft/subscriptions.ts): a Graph subscription per
   * resource kind, its clientState's secret kept as a hash; a kind Graph refused keeps why, and when.
   */
  graph_push?: { subscriptions: Record<string, GraphSubscriptionCheckpoint> };
  /**
   * Provider B's calendars, live (shared/microsoft/calendar-changes.ts): each calendar's version (a hash
   * of it as we answer it), its calendarView/delta link and window, and what its rounds have seen
   * (versions by hashed event ID, series masters by ID), by which a change is told from one announced.
   */
  graph_calendars?: {
    calendars: Record<
      string,
      {
        version: string;
        /** Where the next round starts (absent until the calendar's first round ended). */
        delta_link?: string;
        /** The end of the delta link's window (epoch ms): a new window is taken before it comes too near. */
        window_end?: number;
        /** Mid-round: the page to go on from, and when the round began (epoch ms, less a margin). */
        next_link?: string;
        round_at?: number;
        /** When the last completed round began (epoch ms, less a margin): events created since are new. */
        read_at?: number;
        /** The round under way announces nothing (a first reading), or only what changed since `recover_since`. */
        silent?: boolean;
        recover_since?: number;
        /** Single events and changed occurrences by ID hash: their version hash (and our ID, for an occurrence). */
        events?: Record<string, string>;
        /** Series masters by ID: their version hash. */
        series?: Record<string, string>;
        /** During a new window's round: what the rounds before it had seen. */
        before?: { events: Record<string, string>; series: Record<string, string> };
      }
    >;
  };
  /** Provider A's contacts, live (shared/google/contact-changes.ts): the People connections' sync token. */
  people?: {
    sync_token: string;
    /** When the last completed listing began (epoch ms): after an expired token, what changed since is read by time. */
    read_at?: number;
    /** Mid-listing: where it goes on, and when it began. */
    page_token?: string;
    listing_at?: number;
  };
  /**
   * Provider B's contacts, live (shared/microsoft/contact-changes.ts): each contact folder's place in its
   * contacts/delta, by folder ID ('default' for the default Contacts folder).
   */
  graph_contacts?: {
    folders: Record<
      string,
      {
        /** Where the next round starts (absent until the folder's first round ended). */
        delta_link?: string;
        /** Mid-round: the page to go on from, and when the round began (epoch ms). */
        next_link?: string;
        round_at?: number;
        /** When the last completed round began (epoch ms). */
        read_at?: number;
        /** The round under way announces nothing (the grant's first). */
        silent?: boolean;
        /** The round under way follows an expired link: it announces only contacts changed since (epoch ms). */
        changed_since?: number;
      }
    >;
  };
  /** Provider B's mail, live (shared/microsoft/mail-changes.ts: GraphMailCursors, each field documented there). */
  graph_mail?: {
    listed_at: number;
    folders: Record<
      string,
      {
        delta_link?: string;
        next_link?: string;
        round_at?: number;
        read_at: number;
        recent?: Record<string, number>;
        silent?: boolean;
        recover_since?: number;
      }
    >;
  };
  version: number;
}

export interface GraphSubscriptionCheckpoint {
  /** Graph's subscription ID (absent while Graph refuses one: see `error`). */
  id?: string;
  resource: string;
  /** SHA-256 of the secret half of its clientState (`<grant ID>.<secret>`). */
  secret_hash?: string;
  /** When Graph ends it (Unix seconds). */
  expires_at?: number;
  /** Why Graph refused it, and when (Unix seconds): tried again an hour later. */
  error?: string;
  refused_at?: number;
}

export interface DavCheckpoints {
  /** Calendars by ID: the sync token of the last run that read it whole (absent: never read yet). */
  calendars: Record<string, { token?: string; ctag?: string; seeded: boolean }>;
  /** The address book the grant's contacts come from, and its token. */
  address_book?: { url: string; token?: string; seeded: boolean };
  /** The calendar list was read once (later runs announce calendars made or removed elsewhere). */
  listed: boolean;
}

export class SyncStateChangedError extends Error {
  constructor() {
    super('The sync state changed or its lease was lost');
    this.name = 'SyncStateChangedError';
  }
}

export async function getSyncState(grantId: GrantId): Promise<MailSyncRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: mailSyncKey(grantId), ConsistentRead: true }),
  );
  return Item ? itemAttributes<MailSyncRecord>(Item, 'entity') : undefined;
}

/** Creates a grant's sync state (nothing when it exists). */
export async function createSyncState(grantId: GrantId, applicationId: ApplicationId, now: number): Promise<void> {
  const record: MailSyncRecord = {
    grant_id: grantId,
    application_id: applicationId,
    seeded: false,
    failures: 0,
    last_change_at: now,
    folders: {},
    version: 1,
  };
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...mailSyncKey(grantId), entity: 'mail_sync', ...record },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

/**
 * Takes the run lease for `seconds` when it is free or lapsed; the state as taken, or undefined when
 * another run holds it (or the grant has no sync state).
 */
export async function takeSyncLease(
  grantId: GrantId,
  leaseId: string,
  now: number,
  seconds: number,
): Promise<MailSyncRecord | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: mailSyncKey(grantId),
        UpdateExpression: 'SET lease_id = :id, lease_until = :until',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(lease_until) OR lease_until < :now)',
        ExpressionAttributeValues: { ':id': leaseId, ':until': now + seconds, ':now': now },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return itemAttributes<MailSyncRecord>(Attributes!, 'entity');
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/** The item that saves a run's checkpoint under its lease (alone, or inside the transaction of a batch's changes). */
export function syncStatePut(state: MailSyncRecord, leaseId: string): TransactItem {
  return {
    Put: {
      TableName: TABLE_NAME,
      Item: { ...mailSyncKey(state.grant_id), entity: 'mail_sync', ...state, lease_id: leaseId },
      ConditionExpression: 'lease_id = :lease',
      ExpressionAttributeValues: { ':lease': leaseId },
    },
  };
}

/** Saves the checkpoint under the lease, with outbox entries committed with it; SyncStateChangedError when the lease was lost. */
export async function saveSyncState(
  state: MailSyncRecord,
  leaseId: string,
  outbox: readonly OutboxEntry[] = [],
): Promise<void> {
  try {
    if (outbox.length) await transactWrite([['state', syncStatePut(state, leaseId)], ...outboxItems(outbox)]);
    else await dynamo.send(new PutCommand(syncStatePut(state, leaseId).Put!));
  } catch (error) {
    if (
      error instanceof ConditionalCheckFailedException ||
      (error instanceof TransactionConditionError && error.has('state'))
    )
      throw new SyncStateChangedError();
    throw error;
  }
}

/** Ends a run: the final state without the lease, and when the next run is due. */
export async function releaseSyncLease(state: MailSyncRecord, leaseId: string, nextDue: number): Promise<void> {
  const { lease_id: _id, lease_until: _until, ...rest } = state;
  try {
    await dynamo.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: { ...mailSyncKey(state.grant_id), entity: 'mail_sync', ...rest, next_due: nextDue },
        ConditionExpression: 'lease_id = :lease',
        ExpressionAttributeValues: { ':lease': leaseId },
      }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw new SyncStateChangedError();
    throw error;
  }
}

/**
 * Records that the grant changed through the API, or that its provider pushed a change (`pushed`):
 * it is active, its next runs come sooner.
 */
export async function touchSyncState(grantId: GrantId, now: number, pushed = false): Promise<void> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: mailSyncKey(grantId),
        UpdateExpression: pushed ? 'SET last_change_at = :now, last_push_at = :now' : 'SET last_change_at = :now',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':now': now },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

export async function deleteSyncState(grantId: GrantId): Promise<void> {
  await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: mailSyncKey(grantId) }));
}

/** A place on the server as messages and drafts record it (`server_uids`, `server_place`): `<uidvalidity>:<uid>`. */
export const serverPlace = (uidValidity: string, uid: number): string => `${uidValidity}:${uid}`;
export function readServerPlace(value: string): { uid_validity: string; uid: number } {
  const at = value.lastIndexOf(':');
  return { uid_validity: value.slice(0, at), uid: Number(value.slice(at + 1)) };
}

/** A message's place in one folder of its server. */
export interface ServerLocation {
  folder_id: string;
  uid_validity: string;
  uid: number;
  message_id: MessageId;
  /** The message's flags there, as last seen (\Seen, \Flagged, ...). */
  flags: string[];
}

export const locationPut = (grantId: GrantId, location: ServerLocation): TransactItem => ({
  Put: {
    TableName: TABLE_NAME,
    Item: {
      ...serverLocationKey(grantId, location.folder_id, location.uid_validity, location.uid),
      entity: 'server_location',
      ...location,
    },
  },
});

export const locationDelete = (
  grantId: GrantId,
  location: Pick<ServerLocation, 'folder_id' | 'uid_validity' | 'uid'>,
): TransactItem => ({
  Delete: {
    TableName: TABLE_NAME,
    Key: serverLocationKey(grantId, location.folder_id, location.uid_validity, location.uid),
  },
});

/** Locations of a folder, by UID (of one UIDVALIDITY, or all of them). */
export async function folderLocations(
  grantId: GrantId,
  folderId: string,
  uidValidity?: string,
): Promise<ServerLocation[]> {
  const { pk, skPrefix } = serverLocationsOf(grantId, folderId, uidValidity);
  const found: ServerLocation[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) found.push(itemAttributes<ServerLocation>(item, 'entity'));
    start = page.LastEvaluatedKey;
  } while (start);
  return found;
}

/** One location, if the message is known there. */
export async function getLocation(
  grantId: GrantId,
  folderId: string,
  uidValidity: string,
  uid: number,
): Promise<ServerLocation | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: serverLocationKey(grantId, folderId, uidValidity, uid),
      ConsistentRead: true,
    }),
  );
  return Item ? itemAttributes<ServerLocation>(Item, 'entity') : undefined;
}

/** A message a `query_imap` list answered that is not synced: its ID's Message-ID header and folder, kept a day. */
export interface DirectId {
  id: MessageId;
  message_id_header: string;
  folder_id: string;
}

export async function rememberDirectIds(grantId: GrantId, ids: readonly DirectId[], expiresAt: number): Promise<void> {
  if (!ids.length) return;
  await batchWrite(
    ids.map((d) => ({
      PutRequest: { Item: { ...directIdKey(grantId, d.id), entity: 'direct_id', ...d, expires_at: expiresAt } },
    })),
  );
}

export async function getDirectId(grantId: GrantId, id: MessageId): Promise<DirectId | undefined> {
  const { Item } = await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: directIdKey(grantId, id) }));
  return Item ? itemAttributes<DirectId>(Item, 'entity', 'expires_at') : undefined;
}

export async function forgetDirectId(grantId: GrantId, id: MessageId): Promise<void> {
  await dynamo.send(new DeleteCommand({ TableName: TABLE_NAME, Key: directIdKey(grantId, id) }));
}

/**
 * Provider B's subscriptions seen as one watch: the first refused one, else the one to end first
 * (lapsed once it has). Undefined when the grant holds none (no public URL: the runs poll).
 */
export function graphWatch(
  state: Pick<MailSyncRecord, 'graph_push'>,
): { topic?: string; expires_at: number; error?: string } | undefined {
  const held = Object.values(state.graph_push?.subscriptions ?? {});
  const refused = held.find((s) => s.error);
  if (refused) return { expires_at: 0, error: refused.error! };
  const ends = held.map((s) => s.expires_at ?? 0);
  return ends.length ? { expires_at: Math.min(...ends) } : undefined;
}
