import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantRecord } from '#shared/db/grants';
import { googleClientOf, GoogleGoneError, GoogleRequestError, type GoogleClient } from '#shared/google/client';
import { contactOf, PERSON_FIELDS, type Person } from '#shared/google/contacts';
import { derivedId, type ApplicationId, type GrantId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import type { SyncOutcome, SyncRun, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider A's contact changes, announced: the People API has no push, so the grant's sync runs read
 * its connections from their sync token (people.connections.list with requestSyncToken) and announce
 * `contact.updated` for each changed contact and `contact.deleted` for each removed one (the contract
 * has no contact.created: a new contact is an update of the address book). The first run takes a
 * token and announces nothing; an expired token (People answers 400 EXPIRED_SYNC_TOKEN, or 410; its
 * tokens last 7 days from a full reading) takes a new one and announces the contacts updated since
 * the last reading began, by their update time. The token moves forward in one conditional write
 * with the notifications, a page at a time.
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

/**
 * After an expired token: the contacts changed since `since` (epoch ms), newest change first
 * (LAST_MODIFIED_DESCENDING), read until the first older one. Deleted contacts are not listed there:
 * a deletion in the gap is the one change no API gives back.
 */
async function changedSince(client: GoogleClient, since: number): Promise<Person[]> {
  const people: Person[] = [];
  let pageToken: string | undefined;
  for (;;) {
    const page = await client.call<ConnectionsPage>({
      api: 'people',
      path: '/v1/people/me/connections',
      query: {
        personFields: PERSON_FIELDS,
        pageSize: PAGE,
        sortOrder: 'LAST_MODIFIED_DESCENDING',
        ...(pageToken ? { pageToken } : {}),
      },
    });
    for (const person of page.connections ?? []) {
      const updated = Date.parse(person.metadata?.sources?.[0]?.updateTime ?? '');
      if (!(updated >= since)) return people;
      people.push(person);
    }
    if (!page.nextPageToken) return people;
    pageToken = page.nextPageToken;
  }
}

export const googleContactChanges: SyncSource = {
  async run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
    const client = await googleClientOf(grant);
    const start = run.state.people;
    const listingAt = start?.page_token ? (start.listing_at ?? clock.nowMs()) : clock.nowMs();
    if (!start) {
      await commit(run, { sync_token: await firstToken(client), read_at: listingAt }, []);
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
          cursor = { sync_token: cursor.sync_token, ...(cursor.read_at ? { read_at: cursor.read_at } : {}) };
          await commit(run, cursor, []);
          continue;
        }
        if (!expired(error)) throw error;
        countMetric(METRICS.cursorResets, { provider: 'google' });
        // An expired token: a new one, and the contacts changed since the last reading began, by update time.
        const token = await firstToken(client);
        const outbox = (await changedSince(client, cursor.read_at ?? listingAt)).map((p) => noteOf(grant, p));
        for (let at = 0; at + PAGE < outbox.length; at += PAGE) await commit(run, cursor, outbox.slice(at, at + PAGE));
        await commit(
          run,
          { sync_token: token, read_at: listingAt },
          outbox.slice(Math.floor(Math.max(outbox.length - 1, 0) / PAGE) * PAGE),
        );
        return { status: 'done', changed: changed || outbox.length > 0 };
      }
      const outbox = (page.connections ?? []).map((person) => noteOf(grant, person));
      changed ||= outbox.length > 0;
      if (!page.nextPageToken) {
        if (!page.nextSyncToken) throw new Error('People answered its last page without a nextSyncToken');
        await commit(run, { sync_token: page.nextSyncToken, read_at: listingAt }, outbox);
        return { status: 'done', changed };
      }
      cursor = {
        sync_token: cursor.sync_token,
        page_token: page.nextPageToken,
        listing_at: listingAt,
        ...(cursor.read_at ? { read_at: cursor.read_at } : {}),
      };
      await commit(run, cursor, outbox);
    }
  },
};
