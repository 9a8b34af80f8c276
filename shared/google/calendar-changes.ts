import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantRecord } from '#shared/db/grants';
import {
  calendarFromGoogle,
  eventFromGoogle,
  type GoogleCalendarListEntry,
  type GoogleEvent,
} from '#shared/google/calendar-event';
import { keepChannel, stopChannel } from '#shared/google/calendar-channels';
import { googleClientOf, GoogleGoneError, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { derivedId, type ApplicationId, type GrantId } from '#shared/ids';
import type { NotificationType } from '#schemas/notifications';
import { newNotification } from '#shared/notifications/notification';
import type { SyncOutcome, SyncRun, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';

/**
 * Provider A's calendar changes, announced, read by the grant's sync runs after its mail: nothing of
 * the calendars is stored, the cursors are the state.
 *   - The calendar list, compared with the calendars (and their ETags) the last run saw:
 *     `calendar.created` / `calendar.updated` / `calendar.deleted`.
 *   - Each calendar's events from its Calendar v3 sync token (events.list, deleted ones included):
 *     `event.created` for an event created since the calendar was last read, `event.deleted` for a
 *     cancelled one, `event.updated` otherwise. A calendar's first reading (the grant's first run, or a
 *     calendar new since) takes its sync token and announces nothing; an expired token (410) takes a
 *     new one the same way: changes made in that gap are the part no API gives back.
 * Each calendar's token moves forward in one conditional write with the notifications up to it
 * (`run.save`), so a change is announced once however often the calendar is read. Each calendar's
 * push channel is kept beside its token (shared/google/calendar-channels.ts): its pushes only bring
 * the next run forward.
 */

const PAGE = 250;
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

function eventChange(grant: GrantRecord, calendar: GoogleCalendarListEntry, event: GoogleEvent, since: number) {
  if (event.status === 'cancelled') {
    return note(
      grant,
      'event.deleted',
      { id: event.id, object: 'event', grant_id: grant.id, calendar_id: calendar.id },
      notificationId(grant, event.id, 'deleted', event.updated ?? ''),
    );
  }
  // Created since the last reading began. Google's `created` may carry .000 ms: an event created in the
  // second that reading began, after it began, may count as changed rather than new (event.updated).
  const created = event.created !== undefined && Date.parse(event.created) >= since;
  return note(
    grant,
    created ? 'event.created' : 'event.updated',
    eventFromGoogle(grant, calendar.id, event, calendar.timeZone),
    notificationId(grant, event.id, created ? 'created' : 'updated', event.updated ?? ''),
  );
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

    // Then each calendar's events, each committed with its own token.
    for (const entry of entries) {
      if (entry.accessRole === 'freeBusyReader') continue;
      if (run.outOfTime()) return { status: 'more', changed };
      const checkpoint = run.state.gcal!.calendars[entry.id]!;
      const startedAt = clock.nowMs();
      let read: { items: GoogleEvent[]; nextSyncToken: string };
      let notes: OutboxEntry[] = [];
      try {
        read = await readEvents(client, entry.id, checkpoint.sync_token);
        notes = read.items.map((e) => eventChange(grant, entry, e, checkpoint.read_at ?? startedAt));
      } catch (error) {
        if (error instanceof GoogleNotFoundError) continue; // Removed from the list meanwhile: next run says so.
        if (!(error instanceof GoogleGoneError) || !checkpoint.sync_token) throw error;
        read = await readEvents(client, entry.id, undefined);
      }
      const channel = await keepChannel(client, grant.id, entry.id, checkpoint.channel);
      const { channel: _old, ...rest } = checkpoint;
      const next = { ...rest, sync_token: read.nextSyncToken, read_at: startedAt, ...(channel ? { channel } : {}) };
      await commit(
        run,
        { ...run.state, gcal: { calendars: { ...run.state.gcal!.calendars, [entry.id]: next } } },
        notes,
      );
      changed ||= notes.length > 0;
    }
    return { status: 'done', changed };
  },
};
