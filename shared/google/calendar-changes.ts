import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantRecord } from '#shared/db/grants';
import {
  calendarFromGoogle,
  eventFromGoogle,
  type GoogleCalendarListEntry,
  type GoogleEvent,
} from '#shared/google/calendar-event';
import { keepChannel, stopChannel } from '#shared/google/calendar-channels';
import {
  googleClientOf,
  GoogleGoneError,
  GoogleNotFoundError,
  GoogleRequestError,
  type GoogleClient,
} from '#shared/google/client';
import { derivedId, type ApplicationId, type GrantId } from '#shared/ids';
import type { NotificationType } from '#schemas/notifications';
import { newNotification } from '#shared/notifications/notification';
import type { SyncOutcome, SyncRun, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider A's calendar changes, announced, read by the grant's sync runs after its mail: nothing of
 * the calendars is stored, the cursors are the state.
 *   - The calendar list, compared with the calendars (and their ETags) the last run saw:
 *     `calendar.created` / `calendar.updated` / `calendar.deleted`.
 *   - Each calendar's events from its Calendar v3 sync token (events.list, deleted ones included):
 *     `event.created` for an event created since the calendar was last read, `event.deleted` for a
 *     cancelled one, `event.updated` otherwise. A calendar's first reading (the grant's first run, or a
 *     calendar new since) takes its sync token and announces nothing; an expired token (410) takes a
 *     new one and announces what was updated since the last reading began (events.list updatedMin):
 *     a bounded window, read by time instead of by token.
 * Each calendar's token moves forward in one conditional write with the notifications up to it
 * (`run.save`), so a change is announced once however often the calendar is read. Each calendar's
 * push channel is kept beside its token (shared/google/calendar-channels.ts): its pushes only bring
 * the next run forward.
 */

/** Events per page: a page's notifications and the state fit one DynamoDB transaction (100 items). */
const PAGE = 90;
/** A calendar's full reading (for its first token) stops here and resumes in the next run. */
const CALENDARS_PAGE = 250;

type Checkpoint = NonNullable<NonNullable<SyncRun['state']['gcal']>['calendars']>[string];

const notificationId = (grant: GrantRecord, what: string, change: string, version: string) =>
  derivedId('notification', clock.nowMs(), `${grant.id}\n${what}\n${change}\n${version}`);

async function commit(run: SyncRun, next: SyncRun['state'], outbox: OutboxEntry[] = []): Promise<void> {
  await run.save(next, outbox);
  Object.assign(run.state, next);
}

const note = (
  grant: GrantRecord,
  type: NotificationType,
  object: object,
  id: ReturnType<typeof notificationId>,
): OutboxEntry => ({
  notification: newNotification({
    type,
    applicationId: grant.application_id as ApplicationId,
    grantId: grant.id as GrantId,
    object,
    id,
  }),
});

async function calendarList(client: GoogleClient): Promise<(GoogleCalendarListEntry & { etag?: string })[]> {
  const entries: (GoogleCalendarListEntry & { etag?: string })[] = [];
  let pageToken: string | undefined;
  do {
    const page = await client.call<{ items?: (GoogleCalendarListEntry & { etag?: string })[]; nextPageToken?: string }>(
      {
        api: 'calendar',
        path: '/calendar/v3/users/me/calendarList',
        query: { maxResults: CALENDARS_PAGE, ...(pageToken ? { pageToken } : {}) },
      },
    );
    entries.push(...(page.items ?? []).filter((c) => !c.deleted));
    pageToken = page.nextPageToken;
  } while (pageToken);
  return entries;
}

interface EventsPage {
  items?: GoogleEvent[];
  nextPageToken?: string;
  nextSyncToken?: string;
}

/** A calendar's events since its token (or all of them, for a first token): the changes and the next token. */
async function readEvents(
  client: GoogleClient,
  calendarId: string,
  syncToken: string | undefined,
): Promise<{ items: GoogleEvent[]; nextSyncToken: string }> {
  const items: GoogleEvent[] = [];
  let pageToken: string | undefined;
  for (;;) {
    const page = await client.call<EventsPage>({
      api: 'calendar',
      path: `/calendar/v3/calendars/${encodeURIComponent(calendarId)}/events`,
      query: {
        maxResults: PAGE,
        showDeleted: true,
        ...(syncToken ? { syncToken } : {}),
        ...(pageToken ? { pageToken } : {}),
      },
    });
    // A first reading only wants the token at its end.
    if (syncToken) items.push(...(page.items ?? []));
    if (page.nextSyncToken) return { items, nextSyncToken: page.nextSyncToken };
    pageToken = page.nextPageToken;
    if (!pageToken) throw new Error(`Calendar '${calendarId}' answered its last page without a nextSyncToken`);
  }
}

/** After an expired token: the calendar's events updated since `since` (epoch ms), cancelled ones included. */
async function changedSince(client: GoogleClient, calendarId: string, since: number): Promise<GoogleEvent[]> {
  const items: GoogleEvent[] = [];
  let pageToken: string | undefined;
  do {
    const page = await client.call<EventsPage>({
      api: 'calendar',
      path: `/calendar/v3/calendars/${encodeURIComponent(calendarId)}/events`,
      query: {
        maxResults: 250,
        showDeleted: true,
        updatedMin: new Date(since).toISOString(),
        ...(pageToken ? { pageToken } : {}),
      },
    });
    items.push(...(page.items ?? []));
    pageToken = page.nextPageToken;
  } while (pageToken);
  return items;
}

function eventChange(
  grant: GrantRecord,
  calendar: GoogleCalendarListEntry,
  event: GoogleEvent,
  since: number,
  announcedCreated: readonly string[],
) {
  if (event.status === 'cancelled') {
    return {
      created: false,
      entry: note(
        grant,
        'event.deleted',
        { id: event.id, object: 'event', grant_id: grant.id, calendar_id: calendar.id },
        notificationId(grant, event.id, 'deleted', event.updated ?? ''),
      ),
    };
  }
  // Created since the last reading began, and not announced created by it (an event created while that
  // reading went on). Google's `created` may carry .000 ms: an event created in the second the last
  // reading began, after it began, may count as changed rather than new (event.updated).
  const created =
    event.created !== undefined && Date.parse(event.created) >= since && !announcedCreated.includes(event.id);
  return {
    created,
    entry: note(
      grant,
      created ? 'event.created' : 'event.updated',
      eventFromGoogle(grant, calendar.id, event, calendar.timeZone),
      notificationId(grant, event.id, created ? 'created' : 'updated', event.updated ?? ''),
    ),
  };
}

/**
 * One calendar's events since its token, a page at a time, each page committed with its
 * notifications and the place to go on from (`page_token`), so a listing of any length commits in
 * transactions that fit, and a run that stops mid-listing goes on where it stopped. The listing's
 * last page commits the next sync token. A first reading only takes the token.
 */
async function readCalendar(
  grant: GrantRecord,
  client: GoogleClient,
  run: SyncRun,
  entry: GoogleCalendarListEntry,
): Promise<{ status: 'done' | 'more' | 'gone'; announced: number }> {
  let announced = 0;
  const save = async (checkpoint: Checkpoint, notes: OutboxEntry[]) => {
    announced += notes.length;
    await commit(
      run,
      { ...run.state, gcal: { calendars: { ...run.state.gcal!.calendars, [entry.id]: checkpoint } } },
      notes,
    );
  };
  let cp = run.state.gcal!.calendars[entry.id]!;
  const listingAt = cp.page_token ? (cp.listing_at ?? clock.nowMs()) : clock.nowMs();
  const since = cp.read_at ?? listingAt;
  let createdNow = cp.page_token ? [...(cp.created_now ?? [])] : [];
  for (;;) {
    if (run.outOfTime()) return { status: 'more', announced };
    let page: EventsPage;
    try {
      page = await client.call<EventsPage>({
        api: 'calendar',
        path: `/calendar/v3/calendars/${encodeURIComponent(entry.id)}/events`,
        query: {
          maxResults: PAGE,
          showDeleted: true,
          ...(cp.sync_token ? { syncToken: cp.sync_token } : {}),
          ...(cp.page_token ? { pageToken: cp.page_token } : {}),
        },
      });
    } catch (error) {
      // Left the list meanwhile: the next run says so.
      if (error instanceof GoogleNotFoundError) return { status: 'gone', announced };
      if (error instanceof GoogleGoneError && cp.sync_token) {
        countMetric(METRICS.cursorResets, { provider: 'google' });
        // The token expired: a new one, and what changed since the last reading began read by its update
        // time instead (events.list updatedMin, cancelled ones included), announced page by page.
        const fresh = await readEvents(client, entry.id, undefined);
        const window = await changedSince(client, entry.id, since);
        const notes = window.map((e) => eventChange(grant, entry, e, since, cp.created_ids ?? []).entry);
        for (let at = 0; at + PAGE < notes.length; at += PAGE) await save(cp, notes.slice(at, at + PAGE));
        const { page_token: _p, listing_at: _l, created_now: _c, ...rest } = cp;
        await save(
          { ...rest, sync_token: fresh.nextSyncToken, read_at: listingAt, created_ids: [] },
          notes.slice(Math.floor(Math.max(notes.length - 1, 0) / PAGE) * PAGE),
        );
        return { status: 'done', announced };
      }
      if (error instanceof GoogleRequestError && cp.page_token) {
        // A page token Google no longer takes: the listing starts again from its sync token.
        const { page_token: _p, listing_at: _l, created_now: _c, ...rest } = cp;
        await save(rest, []);
        cp = rest;
        createdNow = [];
        continue;
      }
      throw error;
    }
    const changes = cp.sync_token
      ? (page.items ?? []).map((e) => ({ event: e, ...eventChange(grant, entry, e, since, cp.created_ids ?? []) }))
      : [];
    for (const c of changes)
      if (c.created && c.event.created !== undefined && Date.parse(c.event.created) >= listingAt)
        createdNow.push(c.event.id);
    const notes = changes.map((c) => c.entry);
    const { page_token: _p, listing_at: _l, created_now: _c, ...rest } = cp;
    if (page.nextSyncToken) {
      await save({ ...rest, sync_token: page.nextSyncToken, read_at: listingAt, created_ids: createdNow }, notes);
      return { status: 'done', announced };
    }
    if (!page.nextPageToken) throw new Error(`Calendar '${entry.id}' answered its last page without a nextSyncToken`);
    cp = { ...rest, page_token: page.nextPageToken, listing_at: listingAt, created_now: createdNow };
    await save(cp, notes);
  }
}

export const googleCalendarChanges: SyncSource = {
  async run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
    const client = await googleClientOf(grant);
    const seeding = run.state.gcal === undefined;
    const known = run.state.gcal?.calendars ?? {};
    const entries = await calendarList(client);
    const listed = new Set(entries.map((c) => c.id));
    // The calendar list first: what appeared, changed and went since the last run.
    const outbox: OutboxEntry[] = [];
    if (!seeding) {
      for (const entry of entries) {
        const before = known[entry.id];
        if (!before) {
          outbox.push(
            note(
              grant,
              'calendar.created',
              calendarFromGoogle(grant, entry),
              notificationId(grant, entry.id, 'created', entry.etag ?? ''),
            ),
          );
        } else if (entry.etag && before.etag !== entry.etag) {
          outbox.push(
            note(
              grant,
              'calendar.updated',
              calendarFromGoogle(grant, entry),
              notificationId(grant, entry.id, 'updated', entry.etag),
            ),
          );
        }
      }
      for (const id of Object.keys(known)) {
        const gone = known[id]!.channel;
        if (!listed.has(id) && gone) await stopChannel(client, gone);
        if (!listed.has(id))
          outbox.push(
            note(
              grant,
              'calendar.deleted',
              { id, object: 'calendar', grant_id: grant.id },
              notificationId(grant, id, 'deleted', known[id]!.etag ?? ''),
            ),
          );
      }
    }
    const calendars: Record<string, Checkpoint> = {};
    for (const entry of entries) {
      const before = known[entry.id];
      calendars[entry.id] = before ? { ...before, etag: entry.etag ?? '' } : { etag: entry.etag ?? '' };
    }
    await commit(run, { ...run.state, gcal: { calendars } }, outbox);
    let changed = outbox.length > 0;

    // Then each calendar's events, from its own token, and its push channel.
    for (const entry of entries) {
      if (entry.accessRole === 'freeBusyReader') continue;
      if (run.outOfTime()) return { status: 'more', changed };
      const read = await readCalendar(grant, client, run, entry);
      changed ||= read.announced > 0;
      if (read.status === 'more') return { status: 'more', changed };
      if (read.status === 'gone') continue;
      const checkpoint = run.state.gcal!.calendars[entry.id]!;
      const channel = await keepChannel(client, grant.id, entry.id, checkpoint.channel);
      if (channel !== checkpoint.channel) {
        const { channel: _old, ...rest } = checkpoint;
        await commit(run, {
          ...run.state,
          gcal: {
            calendars: { ...run.state.gcal!.calendars, [entry.id]: { ...rest, ...(channel ? { channel } : {}) } },
          },
        });
      }
    }
    return { status: 'done', changed };
  },
};
