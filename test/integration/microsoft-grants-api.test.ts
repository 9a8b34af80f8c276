import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrantRecord } from '#shared/db/grants';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { makeAgentGrant } from '../support/factories';
import { connectFakeGoogleGrant } from '../support/google';
import { useApi } from '../support/harness';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue } from '../support/queues';

/**
 * Provider B's grants through the API, every capability switched to Graph (shared/registries/ →
 * shared/microsoft/) against the local Graph fake: the provider-only parameters Graph has no use for;
 * mail read, sent, moved and deleted under Graph's IDs; and the scheduler with a microsoft organizer,
 * a google participant and an Agent Account in one configuration (availability from the three
 * calendars in one request; the booking's event created, moved and cancelled at Graph, which invites
 * the guest itself; the guest's mails sent through Graph without a second invitation).
 */
let fanout: string;
let graph: GraphFake;
let google: GoogleFake;
const { api, applicationId } = useApi();
let grant: GrantRecord;
let email: string;
let googleEmail: string;

const DAY = 86_400;
const midnight = (days: number) => (Math.floor(Date.now() / 1000 / DAY) + days) * DAY;

beforeAll(async () => {
  fanout = await createTestQueue('microsoft-api-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  graph = await startGraphFake();
  google = await startGoogleFake();
  ({ grant, email } = await connectFakeMicrosoftGrant(graph, 'microsoft api', {
    applicationId: applicationId(),
    scope: ['Mail.ReadWrite', 'Mail.Send', 'Calendars.ReadWrite', 'offline_access'],
  }));
  ({ email: googleEmail } = await connectFakeGoogleGrant(google, 'microsoft api', { applicationId: applicationId() }));
});
afterAll(async () => {
  expect(graph?.violations()).toEqual([]);
  expect(google?.requestViolations).toEqual([]);
  expect(google?.responseViolations).toEqual([]);
  await graph?.close();
  await google?.close();
});

describe('microsoft grants through the API', () => {
  it('refuses the provider-only parameters Graph has no use for, and accepts query_imap=false', async () => {
    const imap = await api.get(`/v3/grants/${grant.id}/messages?query_imap=true`);
    expect(imap.status, imap.text).toBe(400);
    expect(imap.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect(imap.body.error.message).toMatch(/'query_imap' applies to IMAP grants/);
    const shared = await api.get(`/v3/grants/${grant.id}/threads?shared_from=boss@example.org`);
    expect(shared.status, shared.text).toBe(400);
    expect(shared.body.error.message).toMatch(/'shared_from' is not supported for microsoft grants/);
    const plain = await api.get(`/v3/grants/${grant.id}/messages?query_imap=false`);
    expect(plain.status, plain.text).toBe(200);
  });

  it('reads, sends, moves and deletes mail under Graph’s IDs', async () => {
    const delivered = graph.deliver(email, {
      from: { name: 'Ann', address: 'ann@example.org' },
      to: email,
      subject: 'Plans',
      text: 'Shall we?',
    });
    const message = await api.get(`/v3/grants/${grant.id}/messages/${encodeURIComponent(delivered.id)}`);
    expect(message.status, message.text).toBe(200);
    expect(message.body.data).toMatchObject({ id: delivered.id, subject: 'Plans', unread: true });
    expect(delivered.id.length).toBeGreaterThan(64);
    const thread = await api.get(`/v3/grants/${grant.id}/threads/${encodeURIComponent(message.body.data.thread_id)}`);
    expect(thread.status, thread.text).toBe(200);
    expect(thread.body.data.message_ids).toEqual([delivered.id]);

    const reply = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'ann@example.org' }],
      subject: 'Re: Plans',
      body: 'Yes',
      reply_to_message_id: delivered.id,
    });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.data).toMatchObject({ subject: 'Re: Plans', thread_id: message.body.data.thread_id });

    const archive = await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Archive 2026' });
    expect(archive.status, archive.text).toBe(200);
    const moved = await api.put(`/v3/grants/${grant.id}/messages/${encodeURIComponent(delivered.id)}`, {
      folders: [archive.body.data.id],
      unread: false,
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data).toMatchObject({ folders: [archive.body.data.id], unread: false });
    // Immutable IDs: a moved message keeps its ID.
    const movedId = moved.body.data.id as string;
    expect(movedId).toBe(delivered.id);
    const deleted = await api.request('DELETE', `/v3/grants/${grant.id}/messages/${encodeURIComponent(movedId)}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ request_id: expect.any(String) });
  });

  it('schedules with a microsoft organizer, a google participant and an Agent Account: Graph invites the guest, our mails carry no second invitation', async () => {
    const day = midnight(4);
    const busy = await api.post(`/v3/grants/${grant.id}/events?calendar_id=primary`, {
      title: 'Dentist',
      when: { start_time: day + 11 * 3600, end_time: day + 12 * 3600 },
    });
    expect(busy.status, busy.text).toBe(201);
    const googleBusy = await api.post(`/v3/grants/${encodeURIComponent(googleEmail)}/events?calendar_id=primary`, {
      title: 'Gym',
      when: { start_time: day + 15 * 3600, end_time: day + 16 * 3600 },
    });
    expect(googleBusy.status, googleBusy.text).toBe(201);
    const colleague = await makeAgentGrant(api);
    const config = await api.post(`/v3/grants/${grant.id}/scheduling/configurations`, {
      name: 'Intro call',
      participants: [
        {
          email,
          name: 'Mia',
          is_organizer: true,
          availability: {
            calendar_ids: ['primary'],
            open_hours: [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '9:00', end: '17:00' }],
          },
          booking: { calendar_id: 'primary' },
        },
        { email: googleEmail, name: 'Gia', availability: { calendar_ids: ['primary'] } },
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
        `/v3/scheduling/availability?configuration_id=${configId}&start_time=${day + 9 * 3600}&end_time=${day + 17 * 3600}`,
      );
      expect(answer.status, answer.text).toBe(200);
      return (answer.body.data.time_slots as { start_time: number }[]).map((s) => s.start_time - day);
    };
    // The dentist at 11:00 is Graph's busy time, the gym at 15:00 Google's.
    expect(await slotsOf()).toEqual([9, 10, 12, 13, 14, 16].map((h) => h * 3600));

    const booked = await api.post(`/v3/scheduling/bookings?configuration_id=${configId}`, {
      start_time: day + 9 * 3600,
      end_time: day + 10 * 3600,
      guest: { name: 'Gus', email: 'gus@guest.example.org' },
    });
    expect(booked.status, booked.text).toBe(201);
    const booking = booked.body.data as { booking_id: string; event_id: string };
    await jobsDone();
    const eventPath = `/v3/grants/${grant.id}/events/${encodeURIComponent(booking.event_id)}?calendar_id=primary`;
    const event = await api.get(eventPath);
    expect(event.status, event.text).toBe(200);
    expect(event.body.data).toMatchObject({ title: 'Intro call', when: { start_time: day + 9 * 3600 } });
    expect(event.body.data.participants.map((p: { email: string }) => p.email)).toContain('gus@guest.example.org');
    expect(await slotsOf()).toEqual([10, 12, 13, 14, 16].map((h) => h * 3600));

    const moved = await api.patch(`/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${configId}`, {
      start_time: day + 13 * 3600,
      end_time: day + 14 * 3600,
    });
    expect(moved.status, moved.text).toBe(200);
    await jobsDone();
    expect((await api.get(eventPath)).body.data.when.start_time).toBe(day + 13 * 3600);

    const cancelled = await api.request(
      'DELETE',
      `/v3/scheduling/bookings/${booking.booking_id}?configuration_id=${configId}`,
      { body: { cancellation_reason: 'Plans changed' } },
    );
    expect(cancelled.status, cancelled.text).toBe(200);
    await jobsDone();
    const gone = await api.get(eventPath);
    expect([404, 200]).toContain(gone.status);
    if (gone.status === 200) expect(gone.body.data.status).toBe('cancelled');
    expect(await slotsOf()).toEqual([9, 10, 12, 13, 14, 16].map((h) => h * 3600));

    // The guest's mails left from the organizer's mailbox through Graph: confirmed, rescheduled, cancelled,
    // none with an invitation of ours (Graph sent the meeting's own).
    const sent = await api.get(`/v3/grants/${grant.id}/messages?in=sentitems&limit=20`);
    expect(sent.status, sent.text).toBe(200);
    const mails = (sent.body.data as { subject: string; attachments?: { filename: string }[] }[]).filter((m) =>
      m.subject.startsWith('Booking '),
    );
    expect(mails.map((m) => m.subject).sort()).toEqual(
      ['Booking cancelled: Intro call', 'Booking confirmed: Intro call', 'Booking rescheduled: Intro call'].sort(),
    );
    for (const mail of mails) expect(mail.attachments ?? []).toEqual([]);
  });
});
