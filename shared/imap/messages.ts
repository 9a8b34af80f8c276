import type { ImapFlow } from 'imapflow';
import { requireMessage } from '#shared/mailbox/lookup';
import { getMessage as storedMessage, listMessages as storedMessages } from '#shared/mailbox/messages';
import { changeMessage, hardDeleteMessage } from '#shared/mailbox/message-ops';
import * as folders from '#shared/db/folders';
import type { GrantRecord } from '#shared/db/grants';
import type { FolderRecord, MessageRecord } from '#shared/db/mail-records';
import {
  getLocation,
  locationDelete,
  locationPut,
  readServerPlace,
  serverPlace,
  touchSyncState,
} from '#shared/db/mail-sync';
import type { NamedTransactItem } from '#shared/db/transact';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { withImap } from '#shared/imap/session';
import { keptFlags } from '#shared/imap/sync';
import { getOnServer, listOnServer } from '#shared/imap/direct';
import type { DeleteMessageQuery, ListMessagesQuery, MessageIdQuery, UpdateMessageBody } from '#schemas/mail';
import type { MessagesProvider } from '#shared/providers/contract';
import { clock } from '#shared/time';

/**
 * Messages of an IMAP grant. Reads answer from the synced store (the same records, filters and search
 * as an Agent Account's); `fields=raw_mime` reads the MIME from the server (it is not stored twice).
 * Changes are written to the server first (STORE flags, UID MOVE, expunge) and then to the store with
 * the message's new locations, so the next sync finds nothing left to report and nothing is lost if
 * the server refuses: a refusal answers an error and the store is unchanged.
 */

/** Where a message is: its folder's path, UIDVALIDITY and UID, per folder. */
interface Place {
  folder: FolderRecord;
  uidValidity: string;
  uid: number;
}

async function placesOf(grant: GrantRecord, record: MessageRecord): Promise<Place[]> {
  const entries = Object.entries(record.server_uids ?? {});
  const found = await folders.getFolders(
    grant.id,
    entries.map(([id]) => id),
  );
  const byId = new Map(found.map((f) => [f.id, f]));
  return entries.flatMap(([folderId, value]) => {
    const folder = byId.get(folderId);
    const { uid_validity: uidValidity, uid } = readServerPlace(value);
    return folder?.server_path ? [{ folder, uidValidity, uid }] : [];
  });
}

/** Opens a place's folder for writing; false when its UIDs were reset since (the next sync maps it again). */
async function openPlace(client: ImapFlow, place: Place): Promise<boolean> {
  const box = await client.mailboxOpen(place.folder.server_path!);
  return String(box.uidValidity) === place.uidValidity;
}

const serverRefused = (error: unknown, what: string) => {
  const e = error as { responseText?: string; message?: string };
  return new InvalidRequestError(`The IMAP server refused to ${what}: ${e.responseText ?? e.message ?? String(error)}`);
};

/** The message's MIME, read from the first of its folders on the server; undefined when it is no longer there. */
export async function serverSource(grant: GrantRecord, record: MessageRecord): Promise<Buffer | undefined> {
  const [place] = await placesOf(grant, record);
  if (!place) return undefined;
  return withImap(grant, async (client) => {
    if (!(await openPlace(client, place))) return undefined;
    const message = await client.fetchOne(String(place.uid), { source: true }, { uid: true });
    return message ? message.source : undefined;
  });
}

export async function getImapMessage(grant: GrantRecord, messageId: string, query: MessageIdQuery) {
  if (query.query_imap) return getOnServer(grant, messageId, query);
  if (query.fields !== 'raw_mime') return storedMessage(grant, messageId, query);
  const raw = await serverSource(grant, await requireMessage(grant, messageId));
  if (!raw) throw new NotFoundError(`Message '${messageId}' is no longer on the server`);
  const view = await storedMessage(grant, messageId, { ...query, fields: 'standard' });
  return { ...view, raw_mime: raw.toString('base64url') };
}

export async function updateImapMessage(grant: GrantRecord, messageId: string, body: UpdateMessageBody) {
  const record = await requireMessage(grant, messageId);
  const changes = body as {
    unread?: boolean;
    starred?: boolean;
    folders?: string[];
    metadata?: Record<string, string>;
  };
  let uids = { ...record.server_uids };
  const items: NamedTransactItem[] = [];
  if (changes.folders) {
    const targets = await folders.getFolders(grant.id, changes.folders);
    const missing = changes.folders.find((id) => !targets.some((f) => f.id === id));
    if (missing) throw new NotFoundError(`Folder '${missing}' not found`);
    if (changes.folders.length !== 1)
      throw new InvalidRequestError("An IMAP message is in one folder at a time: 'folders' takes one folder ID");
  }
  const places = await placesOf(grant, record);
  if (!places.length) throw new NotFoundError(`Message '${messageId}' is no longer on the server`);
  await withImap(grant, async (client) => {
    for (const place of places) {
      if (!(await openPlace(client, place))) continue;
      const range = String(place.uid);
      try {
        if (changes.unread !== undefined)
          await (changes.unread
            ? client.messageFlagsRemove(range, ['\\Seen'], { uid: true })
            : client.messageFlagsAdd(range, ['\\Seen'], { uid: true }));
        if (changes.starred !== undefined)
          await (changes.starred
            ? client.messageFlagsAdd(range, ['\\Flagged'], { uid: true })
            : client.messageFlagsRemove(range, ['\\Flagged'], { uid: true }));
      } catch (error) {
        throw serverRefused(error, 'change the message flags');
      }
      const location = await getLocation(grant.id, place.folder.id, place.uidValidity, place.uid);
      const fetched = await client.fetchOne(range, { flags: true }, { uid: true });
      const flags = fetched ? fetched.flags : undefined;
      if (location && flags)
        items.push([`location:${place.folder.id}`, locationPut(grant.id, { ...location, flags: keptFlags(flags) })]);
    }
    const target = changes.folders?.[0];
    if (target && !(record.folders.length === 1 && record.folders[0] === target)) {
      const destination = (await folders.getFolder(grant.id, target))!;
      for (const place of places) {
        if (place.folder.id === target || !(await openPlace(client, place))) continue;
        let moved;
        try {
          moved = await client.messageMove(String(place.uid), destination.server_path!, { uid: true });
        } catch (error) {
          throw serverRefused(error, `move the message to '${destination.name}'`);
        }
        // It leaves this folder: its location goes (instead of the flags written above).
        const flagged = items.findIndex(([name]) => name === `location:${place.folder.id}`);
        if (flagged >= 0) items.splice(flagged, 1);
        items.push([
          `unlocate:${place.folder.id}`,
          locationDelete(grant.id, { folder_id: place.folder.id, uid_validity: place.uidValidity, uid: place.uid }),
        ]);
        const { [place.folder.id]: _left, ...rest } = uids;
        uids = rest;
        const newUid = moved && moved.uidMap?.get(place.uid);
        if (newUid && moved && moved.uidValidity !== undefined) {
          uids[target] = serverPlace(String(moved.uidValidity), newUid);
          items.push([
            `locate:${target}`,
            locationPut(grant.id, {
              folder_id: target,
              uid_validity: String(moved.uidValidity),
              uid: newUid,
              message_id: record.id,
              flags: flagsAfter(record, changes),
            }),
          ]);
        }
        // Without UIDPLUS the new UID is unknown: the next sync finds the message there by its Message-ID.
      }
    }
  });
  await touchSyncState(grant.id, clock.nowSeconds());
  // Read again: the server writes above took a while, and the change applies to the current version.
  const fresh = await requireMessage(grant, messageId);
  return (await changeMessage(grant, fresh, changes, { server: { uids, also: items, announce: true } })).view;
}

const flagsAfter = (record: MessageRecord, changes: { unread?: boolean; starred?: boolean }) => {
  const unread = changes.unread ?? record.unread;
  const starred = changes.starred ?? record.starred;
  return [...(unread ? [] : ['\\Seen']), ...(starred ? ['\\Flagged'] : [])];
};

export async function deleteImapMessage(
  grant: GrantRecord,
  messageId: string,
  query: DeleteMessageQuery,
): Promise<void> {
  const record = await requireMessage(grant, messageId);
  if (!query.hard_delete) {
    const trash = await folders.getFolder(grant.id, 'trash');
    if (!trash?.server_path)
      throw new InvalidRequestError("The account has no Trash folder on its server: delete with 'hard_delete=true'");
    if (record.folders.length === 1 && record.folders[0] === 'trash') return;
    await updateImapMessage(grant, messageId, { folders: ['trash'] });
    return;
  }
  const places = await placesOf(grant, record);
  await withImap(grant, async (client) => {
    for (const place of places) {
      if (!(await openPlace(client, place))) continue;
      try {
        await client.messageDelete(String(place.uid), { uid: true });
      } catch (error) {
        throw serverRefused(error, 'delete the message');
      }
    }
  });
  await hardDeleteMessage(grant, record, {
    also: places.map(
      (p) =>
        [
          `location:${p.folder.id}`,
          locationDelete(grant.id, { folder_id: p.folder.id, uid_validity: p.uidValidity, uid: p.uid }),
        ] as const,
    ),
  });
}

export async function listImapMessages(grant: GrantRecord, query: ListMessagesQuery, limit: number) {
  return query.query_imap ? listOnServer(grant, query, limit) : storedMessages(grant, query, limit);
}

export const imapMessages: MessagesProvider = {
  list: listImapMessages,
  get: getImapMessage,
  update: updateImapMessage,
  delete: deleteImapMessage,
};
