import type { ImapFlow } from 'imapflow';
import * as agent from '#shared/mailbox/drafts';
import type { DraftMirror } from '#shared/mailbox/drafts';
import { attachmentsWithContents, storedBody } from '#shared/mailbox/blobs';
import * as folders from '#shared/db/folders';
import type { GrantRecord } from '#shared/db/grants';
import type { DraftRecord, FolderRecord } from '#shared/db/mail-records';
import { locationDelete, locationPut, readServerPlace, serverPlace, touchSyncState } from '#shared/db/mail-sync';
import { getMessage } from '#shared/db/messages';
import type { NamedItems } from '#shared/db/transact';
import { InvalidRequestError } from '#shared/errors';
import type { MessageId } from '#shared/ids';
import { draftCopyHeader } from '#shared/imap/draft-copies';
import { withImap } from '#shared/imap/session';
import type { DraftsProvider } from '#shared/providers/contract';
import { clock } from '#shared/time';

/**
 * Drafts of an IMAP grant: kept as an Agent Account's are (the same records, IDs, filters, attachments
 * and views: shared/mailbox/drafts.ts), and mirrored in the Drafts folder of the account's server, so
 * its other mail clients see them. The server is written first: a draft's MIME (Message-ID: its ID at
 * the grant's domain, shared/imap/draft-copies.ts) is APPENDed with \Draft and \Seen; a new version is
 * APPENDed and the old copy deleted (UID STORE \Deleted, UID EXPUNGE); a deleted draft's copy is
 * deleted. A refusal answers 400 naming the server's reason, and the store is unchanged.
 * The copy's location is stored with the draft (its location item names the draft), so the sync
 * counts the folder right, and it never takes the copy for mail (shared/imap/sync.ts).
 */

const DRAFTS = 'drafts';
const COPY_FLAGS = ['\\Draft', '\\Seen'];

const refused = (error: unknown, what: string) => {
  const e = error as { responseText?: string; message?: string } | undefined;
  return new InvalidRequestError(
    `The IMAP server refused to ${what}: ${e?.responseText ?? e?.message ?? 'it gave no reason'}`,
  );
};

/** `<uidvalidity>:<uid>` as stored on the draft. */
function placeOf(draft: DraftRecord): { uidValidity: string; uid: number } | undefined {
  if (!draft.server_place) return undefined;
  const { uid_validity: uidValidity, uid } = readServerPlace(draft.server_place);
  return { uidValidity, uid };
}

/** The location item of a draft's copy: it names the draft, so the sync finds no message there to change. */
const copyLocation = (draft: DraftRecord, place: { uidValidity: string; uid: number }) => ({
  folder_id: DRAFTS,
  uid_validity: place.uidValidity,
  uid: place.uid,
  message_id: draft.id as string as MessageId,
  flags: COPY_FLAGS,
});

async function draftsFolder(grant: GrantRecord): Promise<FolderRecord & { server_path: string }> {
  const folder = await folders.getFolder(grant.id, DRAFTS);
  if (!folder?.server_path)
    throw new InvalidRequestError(
      'The account has no Drafts folder on its server (none was found by the sync): create one there, or wait for the next sync to find it',
    );
  return folder as FolderRecord & { server_path: string };
}

/** The draft as a MIME message, as a mail client would save it (Bcc left out, as in every message composed here). */
async function draftMime(grant: GrantRecord, draft: DraftRecord, header: string): Promise<Buffer> {
  const [body, attachments, original] = await Promise.all([
    storedBody(draft),
    attachmentsWithContents(draft.attachments),
    draft.reply_to_message_id ? getMessage(grant.id, draft.reply_to_message_id) : undefined,
  ]);
  const repliedTo = original?.message_id_header;
  const { composeMime } = await import('#shared/mail/compose');
  return composeMime({
    from: draft.from[0] ?? { email: grant.email },
    to: draft.to,
    cc: draft.cc,
    bcc: draft.bcc,
    replyTo: draft.reply_to,
    subject: draft.subject,
    ...(draft.is_plaintext ? { text: body } : { html: body }),
    attachments,
    messageId: header,
    ...(repliedTo
      ? { inReplyTo: repliedTo, references: [...original.references, repliedTo].slice(-50) }
      : { references: [] }),
    headers: draft.custom_headers,
    date: new Date(draft.updated_at * 1000),
  });
}

/**
 * Deletes a draft's copy from the selected Drafts folder: its recorded UID, or (when the folder's UIDs
 * were reset since, or the server told no UID) the copies found by its Message-ID, but `keep`.
 */
async function deleteCopy(
  client: ImapFlow,
  folder: FolderRecord & { server_path: string },
  draft: DraftRecord,
  keep?: number,
): Promise<void> {
  let box;
  try {
    box = await client.mailboxOpen(folder.server_path);
  } catch (error) {
    throw refused(error, `open the folder '${folder.name}'`);
  }
  const place = placeOf(draft);
  const uids =
    place && place.uidValidity === String(box.uidValidity)
      ? [place.uid]
      : draft.message_id_header
        ? ((await client.search({ header: { 'message-id': draft.message_id_header } }, { uid: true })) || []).filter(
            (uid) => uid !== keep,
          )
        : [];
  if (uids.length && !(await client.messageDelete(uids.join(','), { uid: true })))
    throw refused(undefined, `delete the draft's earlier copy from '${folder.name}'`);
}

/** The grant's Drafts folder on its server, as a DraftMirror (shared/mailbox/drafts.ts). */
export function serverDrafts(grant: GrantRecord): DraftMirror {
  return {
    async put(draft, previous) {
      const folder = await draftsFolder(grant);
      const header = previous?.message_id_header ?? draftCopyHeader(draft.id, grant.email);
      const raw = await draftMime(grant, draft, header);
      const appended = await withImap(grant, async (client) => {
        let result;
        try {
          result = await client.append(folder.server_path, raw, COPY_FLAGS, new Date(draft.updated_at * 1000));
        } catch (error) {
          throw refused(error, `save the draft in '${folder.name}'`);
        }
        if (!result) throw refused(undefined, `save the draft in '${folder.name}'`);
        if (previous) await deleteCopy(client, folder, previous, result.uid);
        return result;
      });
      await touchSyncState(grant.id, clock.nowSeconds());
      const place =
        appended.uid !== undefined && appended.uidValidity !== undefined
          ? { uidValidity: String(appended.uidValidity), uid: appended.uid }
          : undefined;
      const { server_place: _old, ...rest } = draft;
      const stored: DraftRecord = {
        ...rest,
        message_id_header: header,
        ...(place ? { server_place: serverPlace(place.uidValidity, place.uid) } : {}),
      };
      const before = previous && placeOf(previous);
      const items: NamedItems = [
        ...(before
          ? [
              [
                'copy_location_old',
                locationDelete(grant.id, { folder_id: DRAFTS, uid_validity: before.uidValidity, uid: before.uid }),
              ] as const,
            ]
          : []),
        ...(place ? [['copy_location', locationPut(grant.id, copyLocation(stored, place))] as const] : []),
      ];
      return { draft: stored, items };
    },
    async remove(draft) {
      // A draft saved while the account had no Drafts folder has no copy to remove.
      const folder = await folders.getFolder(grant.id, DRAFTS);
      if (!folder?.server_path || !draft.message_id_header) return [];
      await withImap(grant, (client) => deleteCopy(client, folder as FolderRecord & { server_path: string }, draft));
      await touchSyncState(grant.id, clock.nowSeconds());
      const place = placeOf(draft);
      return place
        ? [
            [
              'copy_location',
              locationDelete(grant.id, { folder_id: DRAFTS, uid_validity: place.uidValidity, uid: place.uid }),
            ] as const,
          ]
        : [];
    },
  };
}

export const imapDrafts: DraftsProvider = {
  async list(grant, query, limit) {
    if (query.query_imap)
      throw new InvalidRequestError(
        "'query_imap' is not available for drafts yet: an IMAP grant's drafts are listed from the store, where every draft made through the API is",
      );
    return agent.listDrafts(grant, query, limit);
  },
  get: async (grant, draftId) => agent.draftObject(await agent.requireDraft(grant, draftId)),
  create: (grant, body, files) => agent.createDraft(grant, body, files, serverDrafts(grant)),
  update: (grant, draftId, body, files) => agent.updateDraft(grant, draftId, body, files, serverDrafts(grant)),
  delete: (grant, draftId) => agent.deleteDraft(grant, draftId, serverDrafts(grant)),
};
