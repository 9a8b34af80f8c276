import type { MailSyncRecord } from '#shared/db/mail-sync';
import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantRecord } from '#shared/db/grants';
import { derivedId, type ApplicationId, type GrantId } from '#shared/ids';
import { allFolders } from '#shared/microsoft/contacts';
import {
  graphClientOf,
  GraphGoneError,
  GraphNotFoundError,
  type GraphClient,
  type GraphPage,
} from '#shared/microsoft/client';
import { contactFromGraph, GRAPH_CONTACT_SELECT, type GraphContact } from '#shared/microsoft/graph-contact';
import { newNotification } from '#shared/notifications/notification';
import type { SyncOutcome, SyncRun, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider B's contact changes, announced, as provider A's are (shared/google/contact-changes.ts):
 * `contact.updated` for each contact added or changed, `contact.deleted` for each one removed (the
 * contract has no contact.created: a new contact is an update of the address book). Graph's contacts
 * delta is per folder and `/contacts/delta` is the default Contacts folder's only, so each folder has its
 * own deltaLink: the default one's (`/contacts/delta`, kept under DEFAULT) and each contact folder's
 * (`contactFolders/{id}/contacts/delta`); a contact in a folder is announced with that folder as its group.
 *   - The grant's first run reads every folder's first round and announces nothing (a baseline).
 *   - Then each page of a round becomes notifications, committed with the link that follows it in one
 *     conditional write (`run.save`): a page announced is never announced again, and a run that stops
 *     (out of time) goes on from the link it committed.
 *   - A folder found since the last run has no baseline: its first round announces what it holds (made
 *     or moved there since). A folder gone loses its cursor; Outlook deleted its contacts with it, and
 *     with no delta left to say which, they are not announced (as for any deletion in an expired gap).
 *   - An expired link (410 `syncStateNotFound`: GraphGoneError) reads the folder's first round again and
 *     announces the contacts changed since the last round began, by their lastModifiedDateTime, as an
 *     expired People token does; deletions in the gap are what no API gives back.
 */

type Cursor = NonNullable<MailSyncRecord['graph_contacts']>['folders'][string];
type Cursors = Record<string, Cursor>;

/** Changes per page: a page's notifications and the state fit one DynamoDB transaction (100 items). */
const PAGE = 90;
const PREFER = { Prefer: `odata.maxpagesize=${PAGE}` };

/** The default Contacts folder's key among the cursors (DynamoDB takes no empty key; Graph's IDs are base64). */
const DEFAULT = 'default';

type DeltaItem = GraphContact & { '@removed'?: { reason?: string } };

const notificationId = (grant: GrantRecord, id: string, change: string, version: string) =>
  derivedId('notification', clock.nowMs(), `${grant.id}\ncontact\n${id}\n${change}\n${version}`);

function noteOf(grant: GrantRecord, folder: string, item: DeltaItem): OutboxEntry {
  const deleted = item['@removed'] !== undefined;
  const version = deleted ? '' : (item.changeKey ?? item.lastModifiedDateTime ?? '');
  return {
    notification: newNotification({
      type: deleted ? 'contact.deleted' : 'contact.updated',
      applicationId: grant.application_id as ApplicationId,
      grantId: grant.id as GrantId,
      object: deleted
        ? { id: item.id, object: 'contact', grant_id: grant.id }
        : contactFromGraph(grant, item, folder === DEFAULT ? undefined : folder),
      id: notificationId(grant, item.id, deleted ? 'deleted' : 'updated', version),
    }),
  };
}

/** What a page of a round announces: nothing in a baseline; after an expired link, only what changed since. */
function announced(grant: GrantRecord, folder: string, cursor: Cursor, items: DeltaItem[]): OutboxEntry[] {
  if (cursor.silent) return [];
  const since = cursor.changed_since;
  return items
    .filter(
      (item) =>
        since === undefined ||
        (item['@removed'] === undefined && !(Date.parse(item.lastModifiedDateTime ?? '') < since)),
    )
    .map((item) => noteOf(grant, folder, item));
}

const deltaRequest = (client: GraphClient, folder: string) => ({
  path:
    folder === DEFAULT
      ? `${client.mailbox}/contacts/delta`
      : `${client.mailbox}/contactFolders/${encodeURIComponent(folder)}/contacts/delta`,
  query: { $select: GRAPH_CONTACT_SELECT },
  headers: PREFER,
});

async function commit(run: SyncRun, folders: Cursors, outbox: OutboxEntry[]): Promise<void> {
  const next = { ...run.state, graph_contacts: { folders } };
  await run.save(next, outbox);
  Object.assign(run.state, next);
}

export const graphContactChanges: SyncSource = {
  async run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
    const client = await graphClientOf(grant);
    const known = run.state.graph_contacts?.folders;
    const folders = [DEFAULT, ...(await allFolders(client)).map((f) => f.id)];
    let cursors: Cursors = Object.fromEntries(
      folders.map((f) => [f, known?.[f] ?? (known ? {} : { silent: true })] as const),
    );
    if (!known || Object.keys(known).length !== folders.length || folders.some((f) => !known[f]))
      await commit(run, cursors, []);

    let changed = false;
    for (const folder of folders) {
      for (;;) {
        if (run.outOfTime()) return { status: 'more', changed };
        const cursor = cursors[folder]!;
        const roundAt = cursor.next_link ? (cursor.round_at ?? clock.nowMs()) : clock.nowMs();
        let page: GraphPage<DeltaItem>;
        try {
          const link = cursor.next_link ?? cursor.delta_link;
          page = link
            ? await client.page<DeltaItem>(link, PREFER)
            : await client.page<DeltaItem>(deltaRequest(client, folder));
        } catch (error) {
          if (error instanceof GraphNotFoundError && folder !== DEFAULT) {
            // The folder was deleted since it was listed: the next run no longer finds it.
            const { [folder]: _gone, ...rest } = cursors;
            cursors = rest;
            await commit(run, cursors, []);
            break;
          }
          if (!(error instanceof GraphGoneError)) throw error;
          countMetric(METRICS.cursorResets, { provider: 'microsoft' });
          // An expired link: the folder's first round again, announcing what changed since the last round began.
          const since = cursor.changed_since ?? cursor.read_at ?? cursor.round_at;
          cursors = {
            ...cursors,
            [folder]: cursor.silent || since === undefined ? { silent: true } : { changed_since: since },
          };
          await commit(run, cursors, []);
          continue;
        }
        const outbox = announced(grant, folder, cursor, page.value);
        changed ||= outbox.length > 0;
        let next: Cursor;
        if (page.nextLink)
          next = {
            next_link: page.nextLink,
            round_at: roundAt,
            ...(cursor.read_at !== undefined ? { read_at: cursor.read_at } : {}),
            ...(cursor.silent ? { silent: true } : {}),
            ...(cursor.changed_since !== undefined ? { changed_since: cursor.changed_since } : {}),
          };
        else if (page.deltaLink) next = { delta_link: page.deltaLink, read_at: roundAt };
        else throw new Error('Graph answered a contacts delta page with neither a nextLink nor a deltaLink');
        cursors = { ...cursors, [folder]: next };
        await commit(run, cursors, outbox);
        if (!page.nextLink) break;
      }
    }
    return { status: 'done', changed };
  },
};
