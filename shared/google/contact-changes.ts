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

const PAGE = 1000;

const notificationId = (grant: GrantRecord, id: string, change: string, version: string) =>
  derivedId('notification', clock.nowMs(), `${grant.id}\ncontact\n${id}\n${change}\n${version}`);

interface ConnectionsPage {
  connections?: Person[];
  nextPageToken?: string;
  nextSyncToken?: string;
}

async function readConnections(
  client: GoogleClient,
  syncToken: string | undefined,
): Promise<{ people: Person[]; nextSyncToken: string }> {
  const people: Person[] = [];
  let pageToken: string | undefined;
  for (;;) {
    const page = await client.call<ConnectionsPage>({
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
    if (syncToken) people.push(...(page.connections ?? []));
    if (!page.nextPageToken) {
      if (!page.nextSyncToken) throw new Error('People answered its last page without a nextSyncToken');
      return { people, nextSyncToken: page.nextSyncToken };
    }
    pageToken = page.nextPageToken;
  }
}

const expired = (error: unknown) =>
  error instanceof GoogleGoneError ||
  (error instanceof GoogleRequestError && /sync token|EXPIRED_SYNC_TOKEN/i.test(error.message));

export const googleContactChanges: SyncSource = {
  async run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
    const client = await googleClientOf(grant);
    const token = run.state.people?.sync_token;
    let read: { people: Person[]; nextSyncToken: string };
    try {
      read = await readConnections(client, token);
    } catch (error) {
      if (!token || !expired(error)) throw error;
      read = await readConnections(client, undefined);
    }
    const outbox: OutboxEntry[] = read.people.map((person) => {
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
    });
    const next = { ...run.state, people: { sync_token: read.nextSyncToken } };
    await run.save(next, outbox);
    Object.assign(run.state, next);
    return { status: 'done', changed: outbox.length > 0 };
  },
};
