import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { EventObject, SendRsvpResult } from '#schemas/event';
import { graphEvents } from '#shared/microsoft/events';
import { graphCalendars } from '#shared/microsoft/calendars';
import { encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import type { CalendarEvent } from '#shared/providers/contract';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Provider B's events, live (shared/microsoft/events.ts, graph-event.ts, recurrence.ts), against the
 * local Graph fake: create, get, list (Graph's filters, ours on its answer, calendarView for
 * expand_recurring, a series' instances, paging bound to the grant), update and delete of events,
 * series and occurrences, the four recurrence restrictions refused before Graph is called, RSVP
 * between two hosted users, Teams meetings, metadata, idempotent creates and a 429 retried. Every
 * request and answer is checked by the fake against Graph's descriptions; every event answered is
 * an EventObject as published.
 */
let fake: GraphFake;
let ada: GrantRecord;
let bob: GrantRecord;
let bobEmail: string;
let adaEmail: string;
/** Tuesday 3 March 2026, 00:00 UTC. */
const T0 = Date.UTC(2026, 2, 3) / 1000;
const HOUR = 3600;
const DAY = 86_400;
const at = (day: number, hours: number) => T0 + day * DAY + hours * HOUR;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validEvent = ajv.compile(EventObject);
const validRsvp = ajv.compile(SendRsvpResult);

/** Responses are schemas too: each event answered is an EventObject as published. */
function valid<T extends CalendarEvent | { items: CalendarEvent[] }>(answer: T): T {
  for (const event of 'items' in answer ? answer.items : [answer])
    expect(validEvent(event), JSON.stringify(validEvent.errors)).toBe(true);
  return answer;
}

/** What a call failed with (caught at once, so no rejection waits unhandled while the test goes on). */
const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => new Error('expected a failure'),
    (error: unknown) => error,
  );

/** Requests that change something at Graph (the `$batch` envelope aside). */
const writes = () => fake.requests().filter((r) => r.method !== 'GET' && r.path !== '/v1.0/$batch');

beforeAll(async () => {
  fake = await startGraphFake();
  const first = await connectFakeMicrosoftGrant(fake, 'microsoft live events', { displayName: 'Ada' });
  ({ grant: ada, email: adaEmail } = first);
  ({ grant: bob, email: bobEmail } = await connectFakeMicrosoftGrant(fake, 'microsoft live events', {
    applicationId: first.applicationId,
    displayName: 'Bob',
  }));
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

describe("Provider B's events, live", () => {
  it('creates an event with its fields, metadata, a reminder and a Teams meeting, and reads it back', async () => {
    // Act
    const created = valid(
      await graphEvents.create(
        ada,
        'primary',
        {
          title: 'Planning',
          description: 'Numbers first',
          location: 'Room 4',
          when: { start_time: at(0, 9), end_time: at(0, 10), start_timezone: 'Europe/Berlin' },
          participants: [{ email: 'ann@example.org', name: 'Ann' }],
          resources: [{ email: 'room4@example.org', name: 'Room 4' }],
          metadata: { key1: 'project-x' },
          reminders: { overrides: [{ reminder_minutes: 10, reminder_method: 'popup' }] },
          conferencing: { provider: 'Microsoft Teams', autocreate: {} },
          visibility: 'private',
          hide_participants: true,
        },
        true,
      ),
    );
    const read = valid(await graphEvents.get(ada, created.id, 'primary'));

    // Assess
    expect(created).toMatchObject({
      object: 'event',
      grant_id: ada.id,
      calendar_id: fake.calendarId(adaEmail),
      title: 'Planning',
      description: 'Numbers first',
      location: 'Room 4',
      when: {
        object: 'timespan',
        start_time: at(0, 9),
        end_time: at(0, 10),
        start_timezone: 'Europe/Berlin',
        end_timezone: 'Europe/Berlin',
      },
      busy: true,
      status: 'confirmed',
      visibility: 'private',
      hide_participants: true,
      read_only: false,
      organizer: { email: adaEmail, name: 'Ada' },
      participants: [{ email: 'ann@example.org', name: 'Ann', status: 'noreply' }],
      resources: [{ email: 'room4@example.org', name: 'Room 4' }],
      conferencing: { provider: 'Microsoft Teams', details: { url: expect.stringMatching(/^https:\/\/teams\./) } },
      reminders: { use_default: false, overrides: [{ reminder_minutes: 10, reminder_method: 'popup' }] },
      metadata: { key1: 'project-x' },
    });
    expect(read).toEqual(created);
  });

  it('keeps all-day events as dates, one day or several', async () => {
    // Act
    const day = valid(
      await graphEvents.create(ada, 'primary', { title: 'Holiday', when: { date: '2026-03-05' } }, true),
    );
    const span = valid(
      await graphEvents.create(
        ada,
        'primary',
        { title: 'Trip', when: { start_date: '2026-03-06', end_date: '2026-03-09' }, busy: false },
        true,
      ),
    );

    // Assess
    expect(day.when).toEqual({ object: 'date', date: '2026-03-05' });
    expect(span.when).toEqual({ object: 'datespan', start_date: '2026-03-06', end_date: '2026-03-09' });
    expect(span.busy).toBe(false);
    expect((await graphEvents.get(ada, span.id, 'primary')).when).toEqual(span.when);
  });

  it('lists with the filters Graph takes and ours on its answer; cancelled ones only when asked', async () => {
    // Prepare: Ada's meeting with Bob, cancelled, leaves Bob a cancelled copy; a free event and one with metadata.
    const calendar = (await graphCalendars.create(ada, { name: 'Filters' })).id;
    const make = (title: string, day: number, extra: object = {}) =>
      graphEvents.create(
        ada,
        calendar,
        { title, when: { start_time: at(day, 9), end_time: at(day, 10) }, ...extra },
        true,
      );
    const standup = await make('Standup notes', 10);
    const focus = await make('Focus time', 11, { busy: false, metadata: { key2: 'deep' } });
    const review = await make('Review', 12, { participants: [{ email: 'cy@example.org' }] });
    const meeting = await graphEvents.create(
      ada,
      'primary',
      { title: 'Sync', when: { start_time: at(20, 9), end_time: at(20, 10) }, participants: [{ email: bobEmail }] },
      true,
    );
    const bobCopy = (await graphEvents.list(bob, { calendar_id: 'primary', ical_uid: meeting.ical_uid }, 10)).items[0]!;
    await graphEvents.delete(ada, meeting.id, 'primary', true);
    const ids = (page: { items: CalendarEvent[] }) => page.items.map((e) => e.id);

    // Act
    const [all, titled, free, busy, metadata, attendees, windowed, uid, updated] = await Promise.all([
      graphEvents.list(ada, { calendar_id: calendar }, 50),
      graphEvents.list(ada, { calendar_id: calendar, title: 'standup' }, 50),
      graphEvents.list(ada, { calendar_id: calendar, busy: false }, 50),
      graphEvents.list(ada, { calendar_id: calendar, busy: true }, 50),
      graphEvents.list(ada, { calendar_id: calendar, metadata_pair: 'key2:deep' }, 50),
      graphEvents.list(ada, { calendar_id: calendar, attendees: 'CY@example.org' }, 50),
      graphEvents.list(ada, { calendar_id: calendar, start: at(11, 0), end: at(12, 0) }, 50),
      graphEvents.list(ada, { calendar_id: calendar, ical_uid: review.ical_uid }, 50),
      graphEvents.list(ada, { calendar_id: calendar, updated_after: T0 - 365 * DAY }, 50),
    ]);
    const bobDefault = await graphEvents.list(bob, { calendar_id: 'primary' }, 50);
    const bobCancelled = valid(await graphEvents.list(bob, { calendar_id: 'primary', show_cancelled: true }, 50));

    // Assess
    valid(all);
    expect(ids(all)).toEqual([standup.id, focus.id, review.id]);
    expect(all.items.every((e) => e.calendar_id === calendar)).toBe(true);
    expect(ids(titled)).toEqual([standup.id]);
    expect(ids(free)).toEqual([focus.id]);
    expect(ids(busy)).toEqual([standup.id, review.id]);
    expect(ids(metadata)).toEqual([focus.id]);
    expect(ids(attendees)).toEqual([review.id]);
    expect(ids(windowed)).toEqual([focus.id]);
    expect(ids(uid)).toEqual([review.id]);
    expect(ids(updated)).toHaveLength(3);
    expect(ids(bobDefault)).not.toContain(bobCopy.id);
    expect(bobCancelled.items.find((e) => e.id === bobCopy.id)).toMatchObject({ status: 'cancelled', read_only: true });
  });

  it('pages through Graph’s nextLink with a token only this grant’s event listings take', async () => {
    // Prepare
    const calendar = (await graphCalendars.create(ada, { name: 'Paging' })).id;
    for (const day of [1, 2, 3])
      await graphEvents.create(
        ada,
        calendar,
        { title: `Day ${day}`, when: { start_time: at(day, 8), end_time: at(day, 9) } },
        true,
      );

    // Act
    const first = await graphEvents.list(ada, { calendar_id: calendar }, 2);
    const second = await graphEvents.list(ada, { calendar_id: calendar, page_token: first.nextCursor! }, 2);
    const otherGrant = await failure(
      graphEvents.list(bob, { calendar_id: 'primary', page_token: first.nextCursor! }, 2),
    );
    const forged = await failure(
      graphEvents.list(
        ada,
        {
          calendar_id: calendar,
          page_token: encodeProviderCursor(`graph-events:${ada.id}`, `${fake.url}/v1.0/me/messages?$skip=2`),
        },
        2,
      ),
    );

    // Assess
    expect(first.items.map((e) => e.title)).toEqual(['Day 1', 'Day 2']);
    expect(first.nextCursor).toBeDefined();
    expect(second.items.map((e) => e.title)).toEqual(['Day 3']);
    expect(second.nextCursor).toBeUndefined();
    expect(otherGrant).toBeInstanceOf(InvalidRequestError);
    expect((forged as Error).message).toMatch(/page_token is not valid/);
  });

  it('expands a series through calendarView, names occurrences by series and start, and lists a series’ instances', async () => {
    // Prepare: weekly on Tuesdays at 09:00 Berlin, four times.
    const series = valid(
      await graphEvents.create(
        ada,
        'primary',
        {
          title: 'Weekly',
          when: { start_time: at(0, 8), end_time: at(0, 9), start_timezone: 'Europe/Berlin' },
          recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=4'],
        },
        true,
      ),
    );

    // Act
    const expanded = valid(
      await graphEvents.list(
        ada,
        { calendar_id: 'primary', expand_recurring: true, start: at(0, 0), end: at(30, 0) },
        50,
      ),
    );
    const instances = valid(
      await graphEvents.list(
        ada,
        { calendar_id: 'primary', master_event_id: series.id, start: at(6, 0), end: at(30, 0) },
        50,
      ),
    );
    const second = valid(await graphEvents.get(ada, `${series.id}_20260310T080000Z`, 'primary'));
    const notOne = await failure(graphEvents.get(ada, `${series.id}_20260311T080000Z`, 'primary'));
    const unbounded = await failure(graphEvents.list(ada, { calendar_id: 'primary', expand_recurring: true }, 50));

    // Assess
    expect(series.recurrence).toEqual(['RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=4']);
    const weekly = expanded.items.filter((e) => e.master_event_id === series.id);
    expect(weekly.map((e) => e.id)).toEqual(
      ['20260303', '20260310', '20260317', '20260324'].map((d) => `${series.id}_${d}T080000Z`),
    );
    expect(weekly.map((e) => (e.when as { start_time: number }).start_time)).toEqual(
      [0, 7, 14, 21].map((d) => at(d, 8)),
    );
    expect(instances.items.map((e) => e.original_start_time)).toEqual([7, 14, 21].map((d) => at(d, 8)));
    expect(second).toMatchObject({ title: 'Weekly', master_event_id: series.id, original_start_time: at(7, 8) });
    expect(notOne).toBeInstanceOf(NotFoundError);
    expect(unbounded).toBeInstanceOf(InvalidRequestError);
    expect((unbounded as Error).message).toMatch(/needs both 'start' and 'end'/);
  });

  it('updates only what the body names, moves an occurrence between its neighbours, and changes a series', async () => {
    // Prepare: daily at 10:00 UTC, five times from Thursday 5 March.
    const series = await graphEvents.create(
      ada,
      'primary',
      {
        title: 'Daily',
        location: 'Desk',
        when: { start_time: at(2, 10), end_time: at(2, 11) },
        recurrence: ['RRULE:FREQ=DAILY;COUNT=5'],
        metadata: { key3: 'kept' },
      },
      true,
    );
    const third = `${series.id}_20260307T100000Z`;

    // Act
    const renamed = valid(await graphEvents.update(ada, series.id, 'primary', { title: 'Daily sync' }, true));
    const moved = valid(
      await graphEvents.update(ada, third, 'primary', { when: { start_time: at(4, 15), end_time: at(4, 16) } }, true),
    );
    const later = valid(
      await graphEvents.update(ada, `${series.id}_20260308T100000Z`, 'primary', { title: 'Fourth, renamed' }, true),
    );
    const expanded = await graphEvents.list(
      ada,
      { calendar_id: 'primary', master_event_id: series.id, start: at(0, 0), end: at(10, 0) },
      50,
    );

    // Assess
    expect(renamed).toMatchObject({ id: series.id, title: 'Daily sync', location: 'Desk', metadata: { key3: 'kept' } });
    expect(renamed.recurrence).toEqual(['RRULE:FREQ=DAILY;COUNT=5']);
    expect(moved).toMatchObject({
      id: third,
      master_event_id: series.id,
      original_start_time: at(4, 10),
      when: { start_time: at(4, 15), end_time: at(4, 16) },
    });
    expect(later).toMatchObject({ id: `${series.id}_20260308T100000Z`, title: 'Fourth, renamed' });
    expect(expanded.items.map((e) => [e.title, (e.when as { start_time: number }).start_time])).toEqual([
      ['Daily sync', at(2, 10)],
      ['Daily sync', at(3, 10)],
      ['Daily sync', at(4, 15)],
      ['Fourth, renamed', at(5, 10)],
      ['Daily sync', at(6, 10)],
    ]);
  });

  it('refuses the four recurrence restrictions, saying which, before asking Graph', async () => {
    // Prepare: weekly on Mondays and Thursdays at 09:00 UTC from Monday 9 March; the occurrence of 16 March removed.
    const series = await graphEvents.create(
      ada,
      'primary',
      {
        title: 'Twice a week',
        when: { start_time: at(6, 9), end_time: at(6, 10) },
        recurrence: ['RRULE:FREQ=WEEKLY;BYDAY=MO,TH;COUNT=6', 'EXDATE:20260316T090000Z'],
      },
      true,
    );
    const thursday = `${series.id}_20260312T090000Z`;
    const removed = `${series.id}_20260316T090000Z`;
    const before = writes().length;

    // Act
    const sameDayAsPrevious = await failure(
      graphEvents.update(ada, thursday, 'primary', { when: { start_time: at(6, 15), end_time: at(6, 16) } }, true),
    );
    const dayOfNext = await failure(
      graphEvents.update(
        ada,
        `${series.id}_20260319T090000Z`,
        'primary',
        { when: { start_time: at(20, 15), end_time: at(20, 16) } },
        true,
      ),
    );
    const restored = await failure(graphEvents.update(ada, removed, 'primary', { title: 'Back again' }, true));
    const readRemoved = await failure(graphEvents.get(ada, removed, 'primary'));
    const severalIndices = await failure(
      graphEvents.create(
        ada,
        'primary',
        {
          title: 'Monthly',
          when: { start_time: at(6, 9), end_time: at(6, 10) },
          recurrence: ['RRULE:FREQ=MONTHLY;BYDAY=1MO,3WE'],
        },
        true,
      ),
    );
    const refusedWrites = writes().length - before;

    // Assess
    expect(refusedWrites, JSON.stringify(writes().slice(before))).toBe(0);
    expect(sameDayAsPrevious).toBeInstanceOf(InvalidRequestError);
    expect((sameDayAsPrevious as Error).message).toMatch(
      /same day as, or before, the previous occurrence \(2026-03-09\).*restriction 1/,
    );
    expect((dayOfNext as Error).message).toMatch(/day of the next occurrence \(2026-03-23\).*restriction 1/);
    expect(restored).toBeInstanceOf(InvalidRequestError);
    expect((restored as Error).message).toMatch(/removed occurrence cannot be restored.*restriction 3/);
    expect(readRemoved).toBeInstanceOf(NotFoundError);
    expect((severalIndices as Error).message).toMatch(/several weekday indices.*restriction 4/);
  });

  it('changing the pattern of a series removes its changed occurrences (restriction 2); the same pattern keeps them', async () => {
    // Prepare: daily at 07:00 UTC, four times, the second one renamed.
    const series = await graphEvents.create(
      ada,
      'primary',
      {
        title: 'Early',
        when: { start_time: at(30, 7), end_time: at(30, 8) },
        recurrence: ['RRULE:FREQ=DAILY;COUNT=4'],
      },
      true,
    );
    await graphEvents.update(ada, `${series.id}_20260403T070000Z`, 'primary', { title: 'Early, changed' }, true);
    const titles = async () =>
      (
        await graphEvents.list(
          ada,
          { calendar_id: 'primary', master_event_id: series.id, start: at(29, 0), end: at(40, 0) },
          50,
        )
      ).items.map((e) => e.title);

    // Act
    await graphEvents.update(
      ada,
      series.id,
      'primary',
      { recurrence: ['RRULE:FREQ=DAILY;COUNT=4'], title: 'Early' },
      true,
    );
    const unchanged = await titles();
    const repatterned = valid(
      await graphEvents.update(
        ada,
        series.id,
        'primary',
        { recurrence: ['RRULE:FREQ=DAILY;INTERVAL=2;COUNT=3'] },
        true,
      ),
    );
    const after = await titles();
    const toSingle = await failure(graphEvents.update(ada, series.id, 'primary', { recurrence: [] }, true));

    // Assess
    expect(unchanged).toEqual(['Early', 'Early, changed', 'Early', 'Early']);
    expect(repatterned.recurrence).toEqual(['RRULE:FREQ=DAILY;INTERVAL=2;COUNT=3']);
    expect(after).toEqual(['Early', 'Early', 'Early']);
    expect((toSingle as Error).message).toMatch(/cannot become a single event/);
  });

  it('turns our rules into Graph’s patterns and back, and refuses what Outlook cannot repeat', async () => {
    // Prepare
    const make = (rule: string, day = 6) =>
      graphEvents.create(
        ada,
        'primary',
        { title: rule, when: { start_time: at(day, 12), end_time: at(day, 13) }, recurrence: [rule] },
        true,
      );

    // Act
    const kept = await Promise.all(
      [
        'RRULE:FREQ=MONTHLY;BYDAY=2TU;UNTIL=20261231T235959Z',
        'RRULE:FREQ=MONTHLY;INTERVAL=2;BYMONTHDAY=9',
        'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1FR;COUNT=3',
        'RRULE:FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=9',
        'RRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;COUNT=2',
      ].map((rule) => make(rule)),
    );
    const weekdays = await make('RRULE:FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR;COUNT=10');
    const refused = await Promise.all(
      ['RRULE:FREQ=MONTHLY;BYMONTHDAY=1,15', 'RRULE:FREQ=YEARLY;BYYEARDAY=100', 'RRULE:FREQ=MONTHLY;BYDAY=MO'].map(
        (rule) => failure(make(rule)),
      ),
    );
    const rdate = await failure(
      graphEvents.create(
        ada,
        'primary',
        {
          title: 'Extra',
          when: { start_time: at(6, 12), end_time: at(6, 13) },
          recurrence: ['RRULE:FREQ=DAILY;COUNT=2', 'RDATE:20260401T120000Z'],
        },
        true,
      ),
    );

    // Assess
    expect(kept.map((e) => e.recurrence![0])).toEqual([
      'RRULE:FREQ=MONTHLY;BYDAY=2TU;UNTIL=20261231T235959Z',
      'RRULE:FREQ=MONTHLY;INTERVAL=2;BYMONTHDAY=9',
      'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1FR;COUNT=3',
      'RRULE:FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=9',
      'RRULE:FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;COUNT=2',
    ]);
    expect(weekdays.recurrence).toEqual(['RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;COUNT=10']);
    for (const error of [...refused, rdate]) {
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect((error as Error).message).toMatch(/provider B/);
    }
  });

  it('refuses, before asking Graph, what Graph cannot do: silence for participants, other conferencing, capacity', async () => {
    // Prepare
    const before = writes().length;
    const when = { start_time: at(8, 9), end_time: at(8, 10) };

    // Act
    const silent = await failure(
      graphEvents.create(ada, 'primary', { title: 'Quiet', when, participants: [{ email: 'ann@example.org' }] }, false),
    );
    const zoom = await failure(
      graphEvents.create(
        ada,
        'primary',
        { title: 'Zoom', when, conferencing: { provider: 'Zoom Meeting', details: { url: 'https://zoom.us/j/1' } } },
        true,
      ),
    );
    const capacity = await failure(graphEvents.create(ada, 'primary', { title: 'Class', when, capacity: 10 }, true));
    const cancelled = await failure(
      graphEvents.create(ada, 'primary', { title: 'Off', when, status: 'cancelled' }, true),
    );
    const refusedWrites = writes().length - before;
    const alone = await graphEvents.create(ada, 'primary', { title: 'Alone', when }, false);

    // Assess
    expect(refusedWrites).toBe(0);
    expect((silent as Error).message).toMatch(/notify_participants=false/);
    expect((zoom as Error).message).toMatch(/autocreate/);
    expect((capacity as Error).message).toMatch(/capacity/);
    expect((cancelled as Error).message).toMatch(/delete the event/);
    expect(alone.title).toBe('Alone');
  });

  it('answers an invitation (accept, maybe, decline), which reaches the organizer; the organizer cannot answer', async () => {
    // Prepare
    const meeting = await graphEvents.create(
      ada,
      'primary',
      { title: 'Review', when: { start_time: at(9, 14), end_time: at(9, 15) }, participants: [{ email: bobEmail }] },
      true,
    );
    const copy = (await graphEvents.list(bob, { calendar_id: 'primary', ical_uid: meeting.ical_uid }, 10)).items[0]!;
    const statusAtAda = async () => (await graphEvents.get(ada, meeting.id, 'primary')).participants[0]!.status;

    // Act
    const accepted = await graphEvents.sendRsvp(bob, copy.id, 'primary', { status: 'yes', comment: 'See you' });
    const yes = await statusAtAda();
    await graphEvents.sendRsvp(bob, copy.id, 'primary', { status: 'maybe' });
    const maybe = await statusAtAda();
    const bobsView = valid(await graphEvents.get(bob, copy.id, 'primary'));
    const window = { calendar_id: 'primary', ical_uid: meeting.ical_uid, busy: true };
    const busyByDefault = await graphEvents.list(bob, window, 10);
    const notBusyWhenTentativeIsNot = await graphEvents.list(bob, { ...window, tentative_as_busy: false }, 10);
    await graphEvents.sendRsvp(bob, copy.id, 'primary', { status: 'no' });
    const no = await statusAtAda();
    const byOrganizer = await failure(graphEvents.sendRsvp(ada, meeting.id, 'primary', { status: 'yes' }));

    // Assess
    expect(validRsvp(accepted)).toBe(true);
    expect([yes, maybe, no]).toEqual(['yes', 'maybe', 'no']);
    expect(bobsView).toMatchObject({ status: 'maybe', busy: true, read_only: true, organizer: { email: adaEmail } });
    expect(busyByDefault.items.map((e) => e.id)).toEqual([copy.id]);
    expect(notBusyWhenTentativeIsNot.items).toEqual([]);
    expect((byOrganizer as Error).message).toMatch(/no invitation to answer/);
    expect(fake.requests().some((r) => /\/events\/[^/]+\/(accept|tentativelyAccept|decline)$/.test(r.path))).toBe(true);
  });

  it('deletes an event, cancels a meeting for its participants, and cancels one occurrence', async () => {
    // Prepare
    const lone = await graphEvents.create(
      ada,
      'primary',
      { title: 'Lone', when: { start_time: at(40, 9), end_time: at(40, 10) } },
      true,
    );
    const meeting = await graphEvents.create(
      ada,
      'primary',
      { title: 'Gone', when: { start_time: at(41, 9), end_time: at(41, 10) }, participants: [{ email: bobEmail }] },
      true,
    );
    const series = await graphEvents.create(
      ada,
      'primary',
      {
        title: 'Thrice',
        when: { start_time: at(42, 9), end_time: at(42, 10) },
        recurrence: ['RRULE:FREQ=DAILY;COUNT=3'],
      },
      true,
    );

    // Act
    await graphEvents.delete(ada, lone.id, 'primary', true);
    const silentMeeting = await failure(graphEvents.delete(ada, meeting.id, 'primary', false));
    await graphEvents.delete(ada, meeting.id, 'primary', true);
    await graphEvents.delete(ada, `${series.id}_20260415T090000Z`, 'primary', true);
    const again = await failure(graphEvents.delete(ada, lone.id, 'primary', true));
    const left = await graphEvents.list(
      ada,
      { calendar_id: 'primary', master_event_id: series.id, start: at(40, 0), end: at(50, 0) },
      10,
    );
    const bobCopy = await graphEvents.list(
      bob,
      { calendar_id: 'primary', ical_uid: meeting.ical_uid, show_cancelled: true },
      10,
    );

    // Assess
    expect((silentMeeting as Error).message).toMatch(/notify_participants=false/);
    expect(again).toBeInstanceOf(NotFoundError);
    expect(left.items.map((e) => e.original_start_time)).toEqual([at(42, 9), at(44, 9)]);
    expect(bobCopy.items.map((e) => e.status)).toEqual(['cancelled']);
    expect(fake.requests().some((r) => r.method === 'POST' && /\/cancel$/.test(r.path))).toBe(true);
  });

  it('creates once per idempotency key: a retried create answers the first event', async () => {
    // Act
    const body = { title: 'Booked', when: { start_time: at(12, 9), end_time: at(12, 10) } };
    const first = await graphEvents.create(ada, 'primary', body, true, 'booking-1');
    const retried = await graphEvents.create(ada, 'primary', body, true, 'booking-1');
    const other = await graphEvents.create(ada, 'primary', body, true, 'booking-2');

    // Assess
    expect(retried.id).toBe(first.id);
    expect(other.id).not.toBe(first.id);
  });

  it('retries a 429 after its Retry-After, and exports a series as iCalendar with its changed occurrence', async () => {
    // Prepare
    const series = await graphEvents.create(
      ada,
      'primary',
      {
        title: 'Export',
        when: { start_time: at(50, 9), end_time: at(50, 10) },
        recurrence: ['RRULE:FREQ=DAILY;COUNT=3'],
      },
      true,
    );
    await graphEvents.update(ada, `${series.id}_20260423T090000Z`, 'primary', { title: 'Export, moved on' }, true);
    fake.inject({ path: /\/calendar\/events$/, method: 'GET', status: 429, retryAfter: 1 });
    const before = fake.requests().length;

    // Act
    const listed = await graphEvents.list(ada, { calendar_id: 'primary', title: 'Export' }, 50);
    const ics = await graphEvents.ics(ada, series.id, 'primary');

    // Assess
    expect(listed.items.map((e) => e.id)).toEqual([series.id]);
    const statuses = fake
      .requests()
      .slice(before)
      .filter((r) => /\/calendar\/events\?/.test(r.path))
      .map((r) => r.status);
    expect(statuses).toEqual([429, 200]);
    expect(ics).toMatch(/RRULE:FREQ=DAILY;COUNT=3/);
    expect(ics).toMatch(/RECURRENCE-ID.*20260423T090000Z/);
    expect(ics).toMatch(/SUMMARY:Export\\, moved on/);
  });
});
