import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrantRecord } from '#shared/db/grants';
import { createSyncState, getSyncState } from '#shared/db/mail-sync';
import { googleCalendars } from '#shared/google/calendars';
import { googleContacts } from '#shared/google/contacts';
import { createGoogleEvent } from '#shared/google/event-writes';
import type { GrantId } from '#shared/ids';
import type { Notification } from '#shared/notifications/notification';
import { mailSyncOf } from '#shared/registries/mail-sync';
import { clock } from '#shared/time';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';
import { syncRun } from '../support/sync-run';

/**
 * Provider A's calendar and contact changes (shared/google/calendar-changes.ts, contact-changes.ts),
 * read by the same runs as its mail (shared/registries/mail-sync.ts) against the local Google fake:
 * the calendar list against what the last run saw, each calendar's events from its sync token, the
 * People connections from theirs; each cursor committed with its notifications, so a change made by
 * another client or through the API is announced once.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google calendar changes'));
  await createSyncState(grant.id as GrantId, grant.application_id as never, clock.nowSeconds());
});

afterAll(async () => {
  expect(fake.requestViolations).toEqual([]);
  expect(fake.responseViolations).toEqual([]);
  await fake?.close();
});

/** One run of the grant's sync (mail, calendars, contacts), as the service makes it. */
const run = () => syncRun(grant, mailSyncOf(grant)!);

const kinds = (notifications: Notification[]) =>
  notifications.map((n) => `${n.type} ${(n.data.object as { id: string }).id}`);

const DAY = Date.UTC(2027, 0, 12) / 1000;

describe("provider A's calendar and contact changes", () => {
  it('takes every cursor on the first run and announces nothing that was there before', async () => {
    await createGoogleEvent(
      grant,
      'primary',
      { title: 'Before', when: { start_time: DAY, end_time: DAY + 3600 } },
      false,
    );
    await googleContacts.create(grant, { given_name: 'Old', surname: 'Friend' });
    expect(await run()).toEqual([]);
    const state = await getSyncState(grant.id as GrantId);
    expect(Object.keys(state?.gcal?.calendars ?? {})).toEqual([email]);
    expect(state?.gcal?.calendars[email]?.sync_token).toEqual(expect.any(String));
    expect(state?.people?.sync_token).toEqual(expect.any(String));
    expect(await run()).toEqual([]);
  });

  it('announces events created, changed by another client and deleted, once each', async () => {
    const created = await createGoogleEvent(
      grant,
      'primary',
      { title: 'Planning', when: { start_time: DAY + 7200, end_time: DAY + 10800 } },
      false,
    );
    const first = await run();
    expect(kinds(first)).toEqual([`event.created ${created.id}`]);
    expect(first[0]!.data.object).toMatchObject({ title: 'Planning', calendar_id: email, grant_id: grant.id });
    expect(await run()).toEqual([]);

    fake.calendarChangedOutside(email, 'primary', { id: created.id, summary: 'Planning (moved)' });
    const changed = await run();
    expect(kinds(changed)).toEqual([`event.updated ${created.id}`]);
    expect(changed[0]!.data.object).toMatchObject({ title: 'Planning (moved)' });

    fake.calendarChangedOutside(email, 'primary', { id: created.id, status: 'cancelled' });
    expect(kinds(await run())).toEqual([`event.deleted ${created.id}`]);
    expect(await run()).toEqual([]);
  });

  it('announces calendars created, renamed and deleted from the calendar list', async () => {
    const calendar = await googleCalendars.create(grant, { name: 'Team' });
    const created = await run();
    expect(kinds(created)).toEqual([`calendar.created ${calendar.id}`]);
    await googleCalendars.update(grant, calendar.id, { name: 'Team (renamed)' });
    const renamed = await run();
    expect(kinds(renamed)).toEqual([`calendar.updated ${calendar.id}`]);
    expect(renamed[0]!.data.object).toMatchObject({ name: 'Team (renamed)' });
    // An event in the new calendar: the calendar was read (its token taken) when it appeared.
    const event = await createGoogleEvent(
      grant,
      calendar.id,
      { title: 'Standup', when: { start_time: DAY, end_time: DAY + 900 } },
      false,
    );
    expect(kinds(await run())).toEqual([`event.created ${event.id}`]);
    await googleCalendars.delete(grant, calendar.id);
    expect(kinds(await run())).toEqual([`calendar.deleted ${calendar.id}`]);
    expect(Object.keys((await getSyncState(grant.id as GrantId))?.gcal?.calendars ?? {})).toEqual([email]);
  });

  it('after an expired token, takes a new one and announces what changed since the last reading by its update time', async () => {
    const gap = await createGoogleEvent(
      grant,
      'primary',
      { title: 'In the gap', when: { start_time: DAY + 30_000, end_time: DAY + 31_000 } },
      false,
    );
    const friend = await googleContacts.create(grant, { given_name: 'Gap', surname: 'Friend' });
    fake.expireCalendarSync(email, 'primary');
    fake.expireContactsSync(email);
    const recovered = kinds(await run());
    expect(recovered).toContain(`event.created ${gap.id}`);
    expect(recovered).toContain(`contact.updated ${friend.id}`);
    expect(await run()).toEqual([]);
    const later = await createGoogleEvent(
      grant,
      'primary',
      { title: 'After the gap', when: { start_time: DAY + 20_000, end_time: DAY + 21_000 } },
      false,
    );
    expect(kinds(await run())).toEqual([`event.created ${later.id}`]);
  });

  it('commits a listing of any length page by page: 120 events and 100 contacts changed between runs, each announced once', async () => {
    const events = Array.from({ length: 120 }, (_, i) =>
      fake.calendarChangedOutside(email, 'primary', {
        summary: `Bulk ${i}`,
        start: { dateTime: new Date((DAY + 86_400 + i * 1800) * 1000).toISOString() },
        end: { dateTime: new Date((DAY + 86_400 + i * 1800 + 900) * 1000).toISOString() },
      }),
    );
    const contacts = [];
    for (let i = 0; i < 100; i++) contacts.push(await googleContacts.create(grant, { given_name: `Bulk ${i}` }));
    const announced = kinds(await run());
    expect(announced.filter((k) => k.startsWith('event.created')).sort()).toEqual(
      events.map((e) => `event.created ${e.id as string}`).sort(),
    );
    expect(announced.filter((k) => k.startsWith('contact.updated')).sort()).toEqual(
      contacts.map((c) => `contact.updated ${c.id}`).sort(),
    );
    expect(await run()).toEqual([]);
    for (const c of contacts) await googleContacts.delete(grant, c.id);
    expect(kinds(await run()).filter((k) => k.startsWith('contact.deleted'))).toHaveLength(100);
  });

  it('announces an event created while a run reads its calendar once as created, then as updated', async () => {
    fake.inject({ method: 'calendar.events.list', delayMs: 300 });
    const reading = run();
    await new Promise((resolve) => setTimeout(resolve, 150));
    const during = fake.calendarChangedOutside(email, 'primary', {
      summary: 'Created mid-read',
      start: { dateTime: new Date((DAY + 40_000) * 1000).toISOString() },
      end: { dateTime: new Date((DAY + 41_000) * 1000).toISOString() },
    });
    const first = [...kinds(await reading), ...kinds(await run())];
    expect(first).toEqual([`event.created ${during.id as string}`]);
    fake.calendarChangedOutside(email, 'primary', { id: during.id, summary: 'Renamed after' });
    expect(kinds(await run())).toEqual([`event.updated ${during.id as string}`]);
  });

  it('announces contacts changed and deleted in the People address book', async () => {
    const contact = await googleContacts.create(grant, { given_name: 'Grace', surname: 'Hopper' });
    const added = await run();
    expect(kinds(added)).toEqual([`contact.updated ${contact.id}`]);
    expect(added[0]!.data.object).toMatchObject({ given_name: 'Grace', surname: 'Hopper' });
    await googleContacts.update(grant, contact.id, { surname: 'Hopper-Murray' });
    expect(kinds(await run())).toEqual([`contact.updated ${contact.id}`]);
    await googleContacts.delete(grant, contact.id);
    expect(kinds(await run())).toEqual([`contact.deleted ${contact.id}`]);
    expect(await run()).toEqual([]);
  });
});
