import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantRecord } from '#shared/db/grants';
import { googleClientOf, GoogleGoneError, GoogleRequestError, type GoogleClient } from '#shared/google/client';
import { contactOf, PERSON_FIELDS, type Person } from '#shared/google/contacts';
import { derivedId, type ApplicationId, type GrantId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import type { SyncOutcome, SyncRun, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';

/**
 * Provider A's contact changes, announced: the People API has no push, so the grant's sync runs read
 * its connections from their sync token (people.connections.list with requestSyncToken) and announce
 * `contact.updated` for each changed contact and `contact.deleted` for each removed one (the contract
 * has no contact.created: a new contact is an update of the address book). The first run takes a
 * token and announces nothing; an expired token (People answers 400 EXPIRED_SYNC_TOKEN, or 410) takes
 * a new one the same way. The token moves forward in one conditional write with the notifications.
 */

/** Contacts per page: a page's notifications and the state fit one DynamoDB transaction (100 items). */
const PAGE = 90;

const notificationId = (grant: GrantRecord, id: string, change: string, version: string) =>
  derivedId('notification', clock.nowMs(), `${grant.id}\ncontact\n${id}\n${change}\n${version}`);

interface ConnectionsPage {
  connections?: Person[];
  nextPageToken?: string;
  nextSyncToken?: string;
}

/** One page of the connections: since `syncToken` (the changes), or all of them (for a first token). */
const connectionsPage = (client: GoogleClient, syncToken?: string, pageToken?: string) =>
  client.call<ConnectionsPage>({
    api: 'people',
    path: '/v1/people/me/connections',
    query: {
      personFields: PERSON_FIELDS,
      pageSize: PAGE,
      requestSyncToken: true,
      ...(syncToken ? { syncToken } : {}),
      ...(pageToken ? { pageToken } : {}),
    },
  });

/** A first token: every page read, nothing kept but the token at the end. */
async function firstToken(client: GoogleClient): Promise<string> {
  let pageToken: string | undefined;
  for (;;) {
    const page = await connectionsPage(client, undefined, pageToken);
    if (!page.nextPageToken) {
      if (!page.nextSyncToken) throw new Error('People answered its last page without a nextSyncToken');
      return page.nextSyncToken;
    }
    pageToken = page.nextPageToken;
  }
}

const expired = (error: unknown) =>
  error instanceof GoogleGoneError ||
  (error instanceof GoogleRequestError && /sync token|EXPIRED_SYNC_TOKEN/i.test(error.message));

const noteOf = (grant: GrantRecord, person: Person): OutboxEntry => {
  const id = person.resourceName.slice(person.resourceName.indexOf('/') + 1);
  const version = person.metadata?.sources?.[0]?.updateTime ?? person.etag ?? '';
  const deleted = person.metadata?.deleted === true;
  return {
    notification: newNotification({
      type: deleted ? 'contact.deleted' : 'contact.updated',
      applicationId: grant.application_id as ApplicationId,
      grantId: grant.id as GrantId,
      object: deleted ? { id, object: 'contact', grant_id: grant.id } : contactOf(grant, person),
      id: notificationId(grant, id, deleted ? 'deleted' : 'updated', version),
    }),
  };
};

async function commit(run: SyncRun, people: NonNullable<SyncRun['state']['people']>, outbox: OutboxEntry[]) {
  const next = { ...run.state, people };
  await run.save(next, outbox);
  Object.assign(run.state, next);
}

export const googleContactChanges: SyncSource = {
  async run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
    const client = await googleClientOf(grant);
    const start = run.state.people;
    if (!start) {
      await commit(run, { sync_token: await firstToken(client) }, []);
      return { status: 'done', changed: false };
    }
    // The changes since the token, a page at a time, each committed with where the listing goes on.
    let cursor = start;
    let changed = false;
    for (;;) {
      if (run.outOfTime()) return { status: 'more', changed };
      let page: ConnectionsPage;
      try {
        page = await connectionsPage(client, cursor.sync_token, cursor.page_token);
      } catch (error) {
        if (cursor.page_token && error instanceof GoogleRequestError && !expired(error)) {
          // A page token People no longer takes: the listing starts again from its sync token.
          cursor = { sync_token: cursor.sync_token };
          await commit(run, cursor, []);
          continue;
        }
        if (!expired(error)) throw error;
        // An expired token (or page token): a new one, nothing announced.
        await commit(run, { sync_token: await firstToken(client) }, []);
        return { status: 'done', changed };
      }
      const outbox = (page.connections ?? []).map((person) => noteOf(grant, person));
      changed ||= outbox.length > 0;
      if (!page.nextPageToken) {
        if (!page.nextSyncToken) throw new Error('People answered its last page without a nextSyncToken');
        await commit(run, { sync_token: page.nextSyncToken }, outbox);
        return { status: 'done', changed };
      }
      cursor = { sync_token: cursor.sync_token, page_token: page.nextPageToken };
      await commit(run, cursor, outbox);
    }
  },
};
