import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { EventObject } from '#schemas/event';
import { graphCalendarChanges } from '#shared/microsoft/calendar-changes';
import { graphCalendars } from '#shared/microsoft/calendars';
import { graphEvents } from '#shared/microsoft/events';
import { graphClientOf } from '#shared/microsoft/client';
import type { GrantRecord } from '#shared/db/grants';
import { createSyncState, getSyncState } from '#shared/db/mail-sync';
import type { Notification } from '#shared/notifications/notification';
import type { GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import type { EventBody } from '../../scripts/local-stack/microsoft/calendar';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { syncRun, syncRunFor } from '../support/sync-run';

/**
 * Provider B's calendar changes (shared/microsoft/calendar-changes.ts) against the local Graph fake:
 * the calendar list compared with the last run's, each calendar's calendarView/delta since its
 * deltaLink as event.created / updated / deleted (a series as its master, a changed occurrence by
 * its series' ID and key), committed with the link under the run's lease, as
 * shared/services/mail-sync.ts runs it. Each event announced is what GET answers, and an EventObject
 * as published. Every request and answer is checked by the fake against Graph's descriptions.
 */
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
let primary: string;
/** How far both clocks (ours and the fake's) have been moved on: time passing between runs. */
let ahead = 0;
let restoreClock: () => void;

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const validEvent = ajv.compile(EventObject);

beforeAll(async () => {
  restoreClock = clock.set(() => Date.now() + ahead);
  fake = await startGraphFake({ now: () => Date.now() + ahead });
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft calendar changes'));
  primary = fake.calendarId(email);
  await createSyncState(grant.id as GrantId, grant.application_id as never, clock.nowSeconds());
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  restoreClock?.();
  await fake?.close();
});

/** One run, as the service makes it: the notifications it committed, in order. */
const run = () => syncRun(grant, graphCalendarChanges);

/** One run that is out of time after `checks` questions; its outcome and what it committed. */
const runFor = (checks: number) => syncRunFor(grant, graphCalendarChanges, checks);

/** Two minutes pass (more than the margin a round reads back), with a run that finds nothing new. */
async function later(): Promise<void> {
  ahead += 2 * 60_000;
  expect(kinds(await run())).toEqual([]);
}

const kinds = (notifications: Notification[]) =>
  notifications.map((n) => `${n.type} ${(n.data.object as { id: string }).id}`);
const cursors = async () => (await getSyncState(grant.id as GrantId))!.graph_calendars!.calendars;

/** An event of `subject`, `days` from now at 10:00 UTC, for an hour. */
function eventAt(subject: string, days: number, extra: EventBody = {}): EventBody {
  const day = new Date(clock.nowMs() + days * 86_400_000).toISOString().slice(0, 10);
  return {
    subject,
    start: { dateTime: `${day}T10:00:00`, timeZone: 'UTC' },
    end: { dateTime: `${day}T11:00:00`, timeZone: 'UTC' },
    ...extra,
  };
}
const create = (event: EventBody, calendar?: string) =>
  fake.changeOutside(email, { kind: 'createEvent', event, ...(calendar ? { calendar } : {}) })!.id;
const update = (id: string, event: EventBody) => fake.changeOutside(email, { kind: 'updateEvent', id, event })!.id;
const remove = (id: string) => fake.changeOutside(email, { kind: 'deleteEvent', id });

/** The announced event is GET's answer, and an EventObject. */
async function expectAsGet(n: Notification, calendarId = primary): Promise<void> {
  const object = n.data.object as { id: string };
  expect(object).toEqual(await graphEvents.get(grant, object.id, calendarId));
  expect(validEvent(object), JSON.stringify(validEvent.errors)).toBe(true);
}

describe("provider B's calendar changes", () => {
  it('takes every calendar’s delta on its first run and announces nothing that was there before', async () => {
    create(eventAt('Before the first run', 3));
    expect(await run()).toEqual([]);
    const cp = (await cursors())[primary]!;
    expect(cp.delta_link).toMatch(/calendarView\/delta\?\$deltatoken=/);
    expect(cp.silent).toBeUndefined();
    expect(Object.keys(cp.events!)).toHaveLength(1);
    // The window: a year back, five years ahead.
    expect(cp.window_end! - clock.nowMs()).toBeGreaterThan(5 * 365 * 86_400_000 - 60_000);
    expect(await run()).toEqual([]);
  });

  it('announces an event made, changed and deleted elsewhere once each, as GET answers it', async () => {
    await later();
    const id = create(eventAt('Made elsewhere', 5, { body: { contentType: 'html', content: '<p>Agenda</p>' } }));
    const created = await run();
    expect(kinds(created)).toEqual([`event.created ${id}`]);
    await expectAsGet(created[0]!);
    expect(created[0]!.data.object).toMatchObject({ title: 'Made elsewhere', calendar_id: primary });
    expect(await run()).toEqual([]);

    await later();
    update(id, { subject: 'Renamed elsewhere' });
    const updated = await run();
    expect(kinds(updated)).toEqual([`event.updated ${id}`]);
    await expectAsGet(updated[0]!);
    expect(updated[0]!.data.object).toMatchObject({ title: 'Renamed elsewhere' });

    remove(id);
    const deleted = await run();
    expect(kinds(deleted)).toEqual([`event.deleted ${id}`]);
    expect(deleted[0]!.data.object).toEqual({ id, object: 'event', grant_id: grant.id, calendar_id: primary });
    expect(await run()).toEqual([]);
  });

  it('announces a series as its master, a changed occurrence by its series and key, a cancelled one as its series changed', async () => {
    await later();
    const start = new Date(clock.nowMs() + 7 * 86_400_000).toISOString().slice(0, 10);
    const master = create({
      ...eventAt('Weekly', 7),
      recurrence: {
        pattern: { type: 'daily', interval: 7 },
        range: { type: 'numbered', startDate: start, numberOfOccurrences: 6 },
      },
    });
    const created = await run();
    // Six occurrences in the view, one notification: the series.
    expect(kinds(created)).toEqual([`event.created ${master}`]);
    await expectAsGet(created[0]!);
    expect(created[0]!.data.object).toMatchObject({ recurrence: [expect.stringMatching(/^RRULE:/)] });
    expect(await run()).toEqual([]);

    await later();
    update(master, { subject: 'Weekly, renamed' });
    const renamed = await run();
    expect(kinds(renamed)).toEqual([`event.updated ${master}`]);
    await expectAsGet(renamed[0]!);

    // One occurrence changed: it, by its series and key (and the series, whose version moved with it).
    const list = await graphEvents.list(
      grant,
      {
        calendar_id: primary,
        master_event_id: master,
        start: Math.floor(clock.nowSeconds()),
        end: clock.nowSeconds() + 60 * 86_400,
      } as never,
      10,
    );
    const [first, second] = list.items;
    await later();
    const graphSecond = (await graphEventsInstances(master, list.items.length))[1]!;
    update(graphSecond, { subject: 'Second, moved on' });
    const changed = await run();
    expect(kinds(changed).sort()).toEqual([`event.updated ${master}`, `event.updated ${second!.id}`].sort());
    await expectAsGet(changed.find((n) => (n.data.object as { id: string }).id === second!.id)!);
    expect(await run()).toEqual([]);

    // The first occurrence cancelled: the series changed (GET no longer lists it among its instances).
    await later();
    remove((await graphEventsInstances(master, list.items.length))[0]!);
    const cancelled = await run();
    expect(kinds(cancelled)).toEqual([`event.updated ${master}`]);
    expect(first!.id).toMatch(new RegExp(`^${master}_`));
    expect(await run()).toEqual([]);

    // Another occurrence changed, then the changed one cancelled: it is deleted, by its series and key.
    await later();
    const third = list.items[2]!;
    const [secondNow, thirdNow] = await graphEventsInstances(master, list.items.length);
    update(thirdNow!, { subject: 'Third, moved on' });
    expect(kinds(await run()).sort()).toEqual([`event.updated ${master}`, `event.updated ${third.id}`].sort());
    await later();
    remove(secondNow!);
    const removed = await run();
    expect(kinds(removed).sort()).toEqual([`event.deleted ${second!.id}`, `event.updated ${master}`].sort());
    expect(removed.find((n) => n.type === 'event.deleted')!.data.object).toEqual({
      id: second!.id,
      object: 'event',
      grant_id: grant.id,
      calendar_id: primary,
    });
    expect(await run()).toEqual([]);

    // The series deleted: it, and its changed occurrence, once each.
    remove(master);
    const gone = await run();
    expect(kinds(gone).sort()).toEqual([`event.deleted ${master}`, `event.deleted ${third.id}`].sort());
    expect(await run()).toEqual([]);
  });

  it('announces calendars made, renamed and deleted; a new calendar is read quietly first, then its events announced', async () => {
    await later();
    const made = await graphCalendars.create(grant, { name: 'Projects' } as never);
    const first = await run();
    expect(kinds(first)).toEqual([`calendar.created ${made.id}`]);
    expect(first[0]!.data.object).toEqual(await graphCalendars.get(grant, made.id));
    expect((await cursors())[made.id]!.delta_link).toBeDefined();

    const id = create(eventAt('In projects', 2), made.id);
    const inIt = await run();
    expect(kinds(inIt)).toEqual([`event.created ${id}`]);
    await expectAsGet(inIt[0]!, made.id);

    await graphCalendars.update(grant, made.id, { name: 'Projects 2027' } as never);
    const renamed = await run();
    expect(kinds(renamed)).toEqual([`calendar.updated ${made.id}`]);
    expect(renamed[0]!.data.object).toMatchObject({ name: 'Projects 2027' });

    await graphCalendars.delete(grant, made.id);
    const deleted = await run();
    expect(kinds(deleted)).toEqual([`calendar.deleted ${made.id}`]);
    expect(deleted[0]!.data.object).toEqual({ id: made.id, object: 'calendar', grant_id: grant.id });
    expect(Object.keys(await cursors())).not.toContain(made.id);
    expect(await run()).toEqual([]);
  });

  it('after an expired delta, takes a new one and announces what was modified since the last round, once', async () => {
    await later();
    const kept = create(eventAt('Kept as it was', 4));
    const changedInGap = create(eventAt('Changed in the gap', 6));
    expect(kinds(await run()).sort()).toEqual([`event.created ${changedInGap}`, `event.created ${kept}`].sort());
    await later();
    fake.expireCalendarDelta(email);
    update(changedInGap, { subject: 'Changed while the link expired' });
    const madeInGap = create(eventAt('Made in the gap', 8));
    const before = (await cursors())[primary]!.delta_link;
    const recovered = await run();
    expect(kinds(recovered).sort()).toEqual([`event.created ${madeInGap}`, `event.updated ${changedInGap}`].sort());
    for (const n of recovered) await expectAsGet(n);
    const cp = (await cursors())[primary]!;
    expect(cp.delta_link).not.toBe(before);
    expect(cp.silent).toBeUndefined();
    expect(cp.before).toBeUndefined();
    expect(await run()).toEqual([]);
  });

  it('commits page by page, stops between pages when out of time, and goes on where it stopped', async () => {
    await later();
    const ids = Array.from({ length: 200 }, (_, i) => create(eventAt(`Bulk ${i}`, 10 + (i % 50))));
    const partial = await runFor(2);
    expect(partial.outcome.status).toBe('more');
    expect(partial.committed.length).toBeGreaterThan(0);
    expect(partial.committed.length).toBeLessThan(200);
    expect((await cursors())[primary]!.next_link).toBeDefined();
    const rest = await run();
    const all = [...partial.committed, ...rest];
    expect(kinds(all).sort()).toEqual(ids.map((id) => `event.created ${id}`).sort());
    expect(await run()).toEqual([]);
    // Deleted, they are removed over three pages too, each deletion once.
    for (const id of ids) remove(id);
    expect(kinds(await run()).sort()).toEqual(ids.map((id) => `event.deleted ${id}`).sort());
  });

  it('announces an event moved out of the window as updated once, then follows it no more', async () => {
    await later();
    const id = create(eventAt('Soon', 3));
    expect(kinds(await run())).toEqual([`event.created ${id}`]);
    update(id, eventAt('Much later', 7 * 365));
    const moved = await run();
    expect(kinds(moved)).toEqual([`event.updated ${id}`]);
    await expectAsGet(moved[0]!);
    update(id, { subject: 'Out of sight' });
    expect(await run()).toEqual([]);
    remove(id);
    expect(await run()).toEqual([]);
  });
});

/** The Graph IDs of a series' instances ahead, in order (the fake's view of them). */
async function graphEventsInstances(master: string, count: number): Promise<string[]> {
  const client = await graphClientOf(grant);
  const page = await client.page<{ id: string }>({
    path: `${client.mailbox}/events/${master}/instances`,
    query: {
      startDateTime: new Date(clock.nowMs() - 86_400_000).toISOString(),
      endDateTime: new Date(clock.nowMs() + 120 * 86_400_000).toISOString(),
      $select: ['id'],
      $top: count,
    },
  });
  return page.value.map((e) => e.id);
}
