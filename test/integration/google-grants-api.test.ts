import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrantRecord } from '#shared/db/grants';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { makeAgentGrant } from '../support/factories';
import { connectFakeGoogleGrant } from '../support/google';
import { useApi } from '../support/harness';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue } from '../support/queues';

/**
 * Provider A's grants through the API, every capability switched to its own APIs (shared/registries/
 * → shared/google/) against the local Google fake: the provider-only parameters Gmail has no use for,
 * a message in two labels as one message, an event series exported as iCalendar with its changed
 * occurrence, and the scheduler with a google organizer (availability from its calendar, the booking's
 * event created, moved and deleted at Google, the guest's mails sent through Gmail with the invitation).
 */
let fanout: string;
let fake: GoogleFake;
const { api, applicationId } = useApi();
let grant: GrantRecord;
let email: string;

const DAY = 86_400;
const midnight = (days: number) => (Math.floor(Date.now() / 1000 / DAY) + days) * DAY;

beforeAll(async () => {
  fanout = await createTestQueue('google-api-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google api', { applicationId: applicationId() }));
});
afterAll(async () => {
  expect(fake.requestViolations).toEqual([]);
  expect(fake.responseViolations).toEqual([]);
  await fake?.close();
});

describe('google grants through the API', () => {
  it('refuses the provider-only parameters Gmail has no use for, and accepts query_imap=false', async () => {
    const imap = await api.get(`/v3/grants/${grant.id}/messages?query_imap=true`);
    expect(imap.status, imap.text).toBe(400);
    expect(imap.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect(imap.body.error.message).toMatch(/'query_imap' applies to IMAP grants/);
    const shared = await api.get(`/v3/grants/${grant.id}/messages?shared_from=boss@example.org`);
    expect(shared.status, shared.text).toBe(400);
    expect(shared.body.error.message).toMatch(/'shared_from' is not supported for google grants/);
    const plain = await api.get(`/v3/grants/${grant.id}/messages?query_imap=false`);
    expect(plain.status, plain.text).toBe(200);
  });

  it('shows a message in two labels as one message with both folders, found in each', async () => {
    const label = await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Projects' });
    expect(label.status, label.text).toBe(200);
    const delivered = fake.deliver(
      email,
      `From: Ann <ann@example.org>\r\nTo: ${email}\r\nSubject: Two labels\r\nMessage-ID: <two-labels@example.org>\r\n\r\nHello\r\n`,
      ['INBOX', 'UNREAD', label.body.data.id],
    );
    const message = await api.get(`/v3/grants/${grant.id}/messages/${delivered.id}`);
    expect(message.status, message.text).toBe(200);
    expect(message.body.data).toMatchObject({ id: delivered.id, subject: 'Two labels', unread: true });
    // Gmail's system labels are folders too (UNREAD among them, as the published contract shows them).
    expect(message.body.data.folders.sort()).toEqual(['INBOX', 'UNREAD', label.body.data.id].sort());
    for (const folder of ['INBOX', label.body.data.id]) {
      const listed = await api.get(`/v3/grants/${grant.id}/messages?in=${encodeURIComponent(folder)}`);
      expect(listed.body.data.map((m: { id: string }) => m.id)).toEqual([delivered.id]);
    }
  });

  it('exports an event series as iCalendar with its changed occurrence and Google’s sequence', async () => {
    const day = midnight(10);
    const created = await api.post(`/v3/grants/${grant.id}/events?calendar_id=primary`, {
      title: 'Standup',
      when: { start_time: day + 9 * 3600, end_time: day + 9 * 3600 + 900, start_timezone: 'UTC', end_timezone: 'UTC' },
      recurrence: ['RRULE:FREQ=DAILY;COUNT=5'],
      participants: [{ email: 'ann@example.org' }],
    });
    expect(created.status, created.text).toBe(201);
    const series = created.body.data as { id: string; ical_uid: string; calendar_id: string };
    const instances = await api.get(
      `/v3/grants/${grant.id}/events?calendar_id=primary&master_event_id=${series.id}&start=${day}&end=${day + 5 * DAY}`,
    );
    expect(instances.status, instances.text).toBe(200);
    const second = (instances.body.data as { id: string }[])[1]!;
    const moved = await api.put(`/v3/grants/${grant.id}/events/${second.id}?calendar_id=primary`, {
      title: 'Standup (late)',
      when: { start_time: day + DAY + 10 * 3600, end_time: day + DAY + 10 * 3600 + 900 },
    });
    expect(moved.status, moved.text).toBe(200);
    const ics = await api.get(`/v3/grants/${grant.id}/events/${series.id}?calendar_id=primary&format=ics`);
    expect(ics.status, ics.text).toBe(200);
    expect(ics.headers.get('content-type')).toMatch(/^text\/calendar/);
    const text = ics.text.replace(/\r\n[ \t]/g, '');
    expect(text.match(/BEGIN:VEVENT/g)).toHaveLength(2);
    expect(text).toContain('RRULE:FREQ=DAILY;COUNT=5');
    expect(text).toContain(`UID:${series.ical_uid}`);
    expect(text).toContain('SUMMARY:Standup (late)');
    expect(text).toMatch(/RECURRENCE-ID[^:]*:\d{8}T090000Z?/);
    expect(text).toMatch(/SEQUENCE:[1-9]/);
    expect(text).toContain('METHOD:PUBLISH');
    const missing = await api.get(`/v3/grants/${grant.id}/events/nosuchevent0?calendar_id=primary&format=ics`);
    expect(missing.status, missing.text).toBe(404);
  });

  it('schedules with a google organizer: busy time from Google, the booking’s event at Google, mails through Gmail', async () => {
    const day = midnight(4);
    const busy = await api.post(`/v3/grants/${grant.id}/events?calendar_id=primary`, {
      title: 'Dentist',
      when: { start_time: day + 11 * 3600, end_time: day + 12 * 3600 },
    });
    expect(busy.status, busy.text).toBe(201);
    const colleague = await makeAgentGrant(api);
    const config = await api.post(`/v3/grants/${grant.id}/scheduling/configurations`, {
      name: 'Intro call',
      participants: [
        {
          email,
          name: 'Gia',
          is_organizer: true,
          availability: {
            calendar_ids: ['primary'],
            open_hours: [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '9:00', end: '17:00' }],
          },
          booking: { calendar_id: 'primary' },
        },
        { email: colleague.email, name: 'Col', availability: { calendar_ids: ['primary'] } },
      ],
      availability: {
        duration_minutes: 60,
        interval_minutes: 60,
        availability_rules: { availability_method: 'collective' },
      },
      event_booking: { title: 'Intro call' },
      scheduler: { min_booking_notice: 0, available_days_in_future: 30 },
    });
    expect(config.status, config.text).toBe(201);
    const configId = config.body.data.id as string;
    const slotsOf = async () => {
      const answer = await api.get(
        `/v3/scheduling/availability?configuration_id=${configId}&start_time=${day + 9 * 3600}&end_time=${day + 14 * 3600}`,
      );
      expect(answer.status, answer.text).toBe(200);
      return (answer.body.data.time_slots as { start_time: number }[]).map((s) => s.start_time - day);
    };
    // The dentist at 11:00 is Google's busy time.
    expect(await slotsOf()).toEqual([9, 10, 12, 13].map((h) => h * 3600));

    const booked = await api.post(`/v3/scheduling/bookings?configuration_id=${configId}`, {
      start_time: day + 9 * 3600,
      end_time: day + 10 * 3600,
      guest: { name: 'Gus', email: 'gus@guest.example.org' },
    });
    expect(booked.status, booked.text).toBe(201);
    const booking = booked.body.data as { booking_id: string; event_id: string };
    await jobsDone();
    const event = await api.get(`/v3/grants/${grant.id}/events/${booking.event_id}?calendar_id=primary`);
    expect(event.status, event.text).toBe(200);
    expect(event.body.data).toMatchObject({ title: 'Intro call', when: { start_time: day + 9 * 3600 } });
    expect(event.body.data.participants.map((p: { email: string }) => p.email)).toContain('gus@guest.example.org');
    expect(await slotsOf()).toEqual([10, 12, 13].map((h) => h * 3600));

    const moved = await api.patch(`/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${configId}`, {
      start_time: day + 13 * 3600,
      end_time: day + 14 * 3600,
    });
    expect(moved.status, moved.text).toBe(200);
    await jobsDone();
    const after = await api.get(`/v3/grants/${grant.id}/events/${booking.event_id}?calendar_id=primary`);
    expect(after.body.data.when.start_time).toBe(day + 13 * 3600);

    const cancelled = await api.request(
      'DELETE',
      `/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${configId}`,
      { body: { cancellation_reason: 'Plans changed' } },
    );
    expect(cancelled.status, cancelled.text).toBe(200);
    await jobsDone();
    const gone = await api.get(`/v3/grants/${grant.id}/events/${booking.event_id}?calendar_id=primary`);
    expect([404, 200]).toContain(gone.status);
    if (gone.status === 200) expect(gone.body.data.status).toBe('cancelled');
    expect(await slotsOf()).toEqual([9, 10, 12, 13].map((h) => h * 3600));

    // The guest's mails left from the organizer's Gmail: confirmed (with the invitation), rescheduled, cancelled.
    const sent = await api.get(`/v3/grants/${grant.id}/messages?in=SENT&limit=10`);
    const subjects = (sent.body.data as { subject: string }[]).map((m) => m.subject).sort();
    expect(subjects).toEqual(
      ['Booking cancelled: Intro call', 'Booking confirmed: Intro call', 'Booking rescheduled: Intro call'].sort(),
    );
    const confirmed = (
      sent.body.data as { subject: string; attachments?: { filename: string; content_type: string }[] }[]
    ).find((m) => m.subject === 'Booking confirmed: Intro call')!;
    // The invitation: a text/calendar alternative and its .ics file (as nodemailer's icalEvent composes it).
    expect(confirmed.attachments?.map((a) => [a.filename, a.content_type.split(';')[0]])).toEqual([
      ['invite.ics', 'application/ics'],
    ]);
  });
});
