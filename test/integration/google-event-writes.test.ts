import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGoogleEvent, deleteGoogleEvent, sendGoogleRsvp, updateGoogleEvent } from '#shared/google/event-writes';
import { getGoogleEvent, listGoogleEvents } from '#shared/google/events';
import { googleClientOf } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Provider A's event writes, live (shared/google/event-writes.ts), against the local Google fake's
 * Calendar v3: create with participants, metadata, reminders, a Meet link asked for; a create
 * retried with its idempotency key; updates, a series, delete; an RSVP to an invitation.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
const DAY = Date.UTC(2026, 3, 6) / 1000; // Monday 6 April 2026

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google event writes'));
});

afterAll(async () => {
  await fake?.close();
});

describe("provider A's event writes, live", () => {
  it('creates an event with participants, metadata, reminders and a Meet link', async () => {
    const event = await createGoogleEvent(
      grant,
      'primary',
      {
        title: 'Kick-off',
        description: 'Agenda to follow',
        when: { start_time: DAY + 9 * 3600, end_time: DAY + 10 * 3600, start_timezone: 'Europe/Paris' },
        participants: [{ email: 'ann@example.org', name: 'Ann' }],
        resources: [{ email: 'room-4@resource.example.org', name: 'Room 4' }],
        metadata: { key1: 'launch' },
        reminders: { use_default: false, overrides: [{ reminder_minutes: 15, reminder_method: 'email' }] },
        conferencing: { provider: 'Google Meet', autocreate: {} },
        busy: true,
      },
      true,
    );
    expect(event).toMatchObject({
      title: 'Kick-off',
      calendar_id: email,
      when: {
        object: 'timespan',
        start_time: DAY + 9 * 3600,
        end_time: DAY + 10 * 3600,
        start_timezone: 'Europe/Paris',
      },
      participants: [{ email: 'ann@example.org', name: 'Ann', status: 'noreply' }],
      resources: [{ email: 'room-4@resource.example.org', name: 'Room 4' }],
      metadata: { key1: 'launch' },
      reminders: { use_default: false, overrides: [{ reminder_minutes: 15, reminder_method: 'email' }] },
    });
    expect((event.conferencing as { details: { url: string } }).details.url).toMatch(/^https:\/\/meet\.google\.com\//);
    expect(await getGoogleEvent(grant, event.id, 'primary')).toMatchObject({ title: 'Kick-off' });
  });

  it('creates once per idempotency key: a retry finds the first event', async () => {
    const body = { title: 'Booked', when: { start_time: DAY + 12 * 3600, end_time: DAY + 13 * 3600 } };
    const first = await createGoogleEvent(grant, 'primary', body, false, 'booking-42');
    const again = await createGoogleEvent(grant, 'primary', body, false, 'booking-42');
    expect(again.id).toBe(first.id);
    const week = { calendar_id: 'primary', start: DAY, end: DAY + 7 * 86400, title: 'Booked' };
    expect((await listGoogleEvents(grant, week, 50)).items).toHaveLength(1);
  });

  it('updates only what the body names, all-day and series included, and deletes', async () => {
    const event = await createGoogleEvent(grant, 'primary', { title: 'Offsite', when: { date: '2026-04-08' } }, false);
    expect(event.when).toEqual({ object: 'date', date: '2026-04-08' });
    const moved = await updateGoogleEvent(
      grant,
      event.id,
      'primary',
      { when: { start_date: '2026-04-08', end_date: '2026-04-10' }, busy: false },
      false,
    );
    expect(moved).toMatchObject({
      title: 'Offsite',
      busy: false,
      when: { object: 'datespan', end_date: '2026-04-10' },
    });
    const series = await updateGoogleEvent(
      grant,
      event.id,
      'primary',
      { recurrence: ['RRULE:FREQ=WEEKLY;COUNT=3'] },
      false,
    );
    expect(series.recurrence).toEqual(['RRULE:FREQ=WEEKLY;COUNT=3']);
    await expect(
      updateGoogleEvent(grant, event.id, 'primary', { recurrence: ['RRULE:FREQ=SOMETIMES'] }, false),
    ).rejects.toThrow(InvalidRequestError);
    await expect(updateGoogleEvent(grant, event.id, 'primary', { capacity: 5 }, false)).rejects.toThrow(/capacity/);
    await deleteGoogleEvent(grant, event.id, 'primary', false);
    expect((await getGoogleEvent(grant, event.id, 'primary')).status).toBe('cancelled');
    await expect(deleteGoogleEvent(grant, 'nothere', 'primary', false)).rejects.toThrow(NotFoundError);
  });

  it("answers an invitation through the account's own attendee entry", async () => {
    const client = await googleClientOf(grant);
    const invitation = await client.call<{ id: string }>({
      api: 'calendar',
      method: 'POST',
      path: '/calendar/v3/calendars/primary/events',
      body: {
        summary: 'Their meeting',
        start: { dateTime: new Date((DAY + 15 * 3600) * 1000).toISOString() },
        end: { dateTime: new Date((DAY + 16 * 3600) * 1000).toISOString() },
        attendees: [{ email: 'host@example.org', organizer: true, responseStatus: 'accepted' }, { email }],
      },
    });
    expect(await sendGoogleRsvp(grant, invitation.id, 'primary', { status: 'maybe', comment: 'If I can' })).toEqual({});
    const answered = await getGoogleEvent(grant, invitation.id, 'primary');
    expect(answered.participants).toContainEqual({ email, status: 'maybe', comment: 'If I can' });
    const alone = await createGoogleEvent(grant, 'primary', { title: 'Mine', when: { date: '2026-04-09' } }, false);
    await expect(sendGoogleRsvp(grant, alone.id, 'primary', { status: 'yes' })).rejects.toThrow(/not a participant/);
  });

  it('sent nothing Google does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
