import { readFileSync } from 'node:fs';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCalendar } from '#shared/calendar/ical';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { smtpClient, startInboundListener, sunkMessages, sunkRaw, waitForSunk } from '../support/mail';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue } from '../support/queues';

/**
 * Invitations and RSVP over iMIP, end to end: the API, the outbox, the jobs worker, the send path,
 * local delivery between Agent Accounts, the SMTP relay sink for outside addresses, and inbound SMTP
 * for invitations from other calendar clients.
 */
let inbound: { port: number; stop(): Promise<void> };
beforeAll(async () => {
  process.env.FANOUT_QUEUE_URL = await createTestQueue('invitations-fanout');
  inbound = await startInboundListener();
});
afterAll(async () => inbound?.stop());
const { api } = useApi();

const at = (iso: string, zone = 'UTC') => Math.floor(DateTime.fromISO(iso, { zone }).toSeconds());
type Ev = {
  id: string;
  ical_uid: string;
  title: string;
  status: string;
  read_only: boolean;
  organizer: { email: string };
  participants: { email: string; status: string }[];
  master_event_id?: string;
};

async function eventsOf(grantId: string, query = '') {
  await jobsDone();
  const response = await api.get(`/v3/grants/${grantId}/events?calendar_id=primary${query}`);
  expect(response.status, response.text).toBe(200);
  return response.body.data as Ev[];
}

describe('invitations between Agent Accounts and to outside addresses', () => {
  it('invites B and an outside guest; B answers yes; A sees it; updates and the cancellation reach B', async () => {
    const [a, b] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    const guest = `guest-${a.id.slice(-8).toLowerCase()}@example.com`;
    const start = at('2026-12-10T14:00', 'Europe/Berlin');
    const created = await api.post(`/v3/grants/${a.id}/events?calendar_id=primary`, {
      title: 'Design review',
      location: 'Room 2',
      when: { start_time: start, end_time: start + 3600, start_timezone: 'Europe/Berlin' },
      participants: [{ email: b.email, name: 'Bee' }, { email: guest }],
    });
    expect(created.status, created.text).toBe(201);
    const event = created.body.data as Ev;

    // B's primary calendar holds the invitation, read-only, organized by A.
    await expect.poll(async () => (await eventsOf(b.id)).length, { timeout: 30_000 }).toBe(1);
    const [invited] = await eventsOf(b.id);
    expect(invited).toMatchObject({
      ical_uid: event.ical_uid,
      title: 'Design review',
      status: 'confirmed',
      read_only: true,
      organizer: { email: a.email },
    });
    expect(invited!.participants.find((p) => p.email === b.email)?.status).toBe('noreply');

    // The outside guest got an iMIP REQUEST through the relay.
    const [mail] = await waitForSunk(guest, 10_000);
    expect(mail, 'REQUEST relayed to the guest').toBeDefined();
    const raw = await sunkRaw(mail!.id);
    expect(raw).toMatch(/Content-Type: text\/calendar;[^\n]*method=REQUEST/i);
    expect(raw).toContain(`UID:${event.ical_uid}`);
    expect(mail!.subject).toContain('Invitation: Design review');
    // Counted as a send of A's: the Sent copy is there.
    const sent = await api.get(`/v3/grants/${a.id}/messages?in=sent`);
    expect(sent.body.data.some((m: { subject: string }) => m.subject.startsWith('Invitation: Design review'))).toBe(
      true,
    );

    // B cannot edit the organizer's event, but answers it.
    const edit = await api.put(`/v3/grants/${b.id}/events/${invited!.id}?calendar_id=primary`, { title: 'Mine now' });
    expect(edit.status).toBe(403);
    const rsvp = await api.post(`/v3/grants/${b.id}/events/${invited!.id}/send-rsvp?calendar_id=primary`, {
      status: 'yes',
      comment: 'See you there',
    });
    expect(rsvp.status, rsvp.text).toBe(200);
    await expect
      .poll(
        async () =>
          (await api.get(`/v3/grants/${a.id}/events/${event.id}?calendar_id=primary`)).body.data.participants.find(
            (p: { email: string }) => p.email === b.email,
          )?.status,
        {
          timeout: 30_000,
        },
      )
      .toBe('yes');
    // While jobs settle, B's own answer stays on B's copy.
    expect((await eventsOf(b.id))[0]!.participants.find((p) => p.email === b.email)?.status).toBe('yes');

    // An update (new title) reaches B; B's answer stands since the time did not change.
    expect(
      (await api.put(`/v3/grants/${a.id}/events/${event.id}?calendar_id=primary`, { title: 'Design review (v2)' }))
        .status,
    ).toBe(200);
    await expect.poll(async () => (await eventsOf(b.id))[0]?.title, { timeout: 30_000 }).toBe('Design review (v2)');
    expect((await eventsOf(b.id))[0]!.participants.find((p) => p.email === b.email)?.status).toBe('yes');

    // A cancels: B's copy is cancelled (gone from the default list, kept for show_cancelled).
    expect((await api.delete(`/v3/grants/${a.id}/events/${event.id}?calendar_id=primary`)).status).toBe(200);
    await expect.poll(async () => (await eventsOf(b.id)).length, { timeout: 30_000 }).toBe(0);
    expect((await eventsOf(b.id, '&show_cancelled=true'))[0]?.status).toBe('cancelled');
    const cancelMail = (await sunkMessages(guest)).find((m) => m.subject?.startsWith('Cancelled event'));
    expect(cancelMail).toBeDefined();
    expect(await sunkRaw(cancelMail!.id)).toMatch(/method=CANCEL/i);
  });

  it('sends nothing with notify_participants=false', async () => {
    const a = await makeAgentGrant(api);
    const guest = `quiet-${a.id.slice(-8).toLowerCase()}@example.com`;
    const created = await api.post(`/v3/grants/${a.id}/events?calendar_id=primary&notify_participants=false`, {
      title: 'Quiet',
      when: { start_time: 5000, end_time: 6000 },
      participants: [{ email: guest }],
    });
    expect(created.status).toBe(201);
    // A sentinel invitation shows the path delivers; the quiet one never arrives.
    const sentinel = `sentinel-${a.id.slice(-8).toLowerCase()}@example.com`;
    await api.post(`/v3/grants/${a.id}/events?calendar_id=primary`, {
      title: 'Loud',
      when: { start_time: 5000, end_time: 6000 },
      participants: [{ email: sentinel }],
    });
    await jobsDone();
    expect(await waitForSunk(sentinel, 10_000)).toHaveLength(1);
    expect(await sunkMessages(guest)).toHaveLength(0);
  });

  it('invites to a weekly series; cancelling one occurrence cancels it on B', async () => {
    const [a, b] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    const start = at('2026-12-07T16:00');
    const series = (
      await api.post(`/v3/grants/${a.id}/events?calendar_id=primary`, {
        title: 'Sync',
        when: { start_time: start, end_time: start + 1800 },
        recurrence: ['RRULE:FREQ=WEEKLY;COUNT=3'],
        participants: [{ email: b.email }],
      })
    ).body.data as Ev;
    const window = `&expand_recurring=true&start=${start - 3600}&end=${start + 30 * 86400}`;
    await expect.poll(async () => (await eventsOf(b.id, window)).length, { timeout: 30_000 }).toBe(3);
    const second = `${series.id}_${DateTime.fromSeconds(start + 7 * 86400, { zone: 'UTC' }).toFormat("yyyyMMdd'T'HHmmss'Z'")}`;
    expect((await api.delete(`/v3/grants/${a.id}/events/${second}?calendar_id=primary`)).status).toBe(200);
    await expect.poll(async () => (await eventsOf(b.id, window)).length, { timeout: 30_000 }).toBe(2);
    const withCancelled = await eventsOf(b.id, `${window}&show_cancelled=true`);
    expect(withCancelled.map((e) => e.status)).toEqual(['confirmed', 'cancelled', 'confirmed']);
  });

  it.each(['google-request.ics', 'outlook-request.ics', 'apple-request.ics'])(
    'puts an invitation from another client (%s) on the primary calendar, and applies its cancellation',
    async (name) => {
      const c = await makeAgentGrant(api);
      // The fixture's first attendee becomes this Agent Account.
      // Unfolded (RFC 5545 3.1), so an address is on one line to be replaced.
      const text = readFileSync(`test/fixtures/ics/${name}`, 'utf8').replace(/\r?\n[ \t]/g, '');
      const parsed = parseCalendar(text);
      const invite = parsed.events[0]!;
      const attendee = invite.participants[0]!.email;
      const ics = text.replace(
        new RegExp(`mailto:${attendee.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'gi'),
        `mailto:${c.email}`,
      );
      await smtpClient(inbound.port).sendMail({
        from: invite.organizer!.email,
        to: c.email,
        subject: `Invitation: ${invite.title}`,
        text: 'invite',
        icalEvent: { method: 'REQUEST', content: ics },
      });
      await expect.poll(async () => (await eventsOf(c.id)).length, { timeout: 30_000 }).toBe(1);
      const [stored] = await eventsOf(c.id);
      expect(stored).toMatchObject({
        ical_uid: invite.uid,
        title: invite.title,
        read_only: true,
        organizer: { email: invite.organizer!.email },
      });
      expect(stored!.participants.some((p) => p.email === c.email)).toBe(true);
      // A cancellation from someone else is ignored; the organizer's own applies.
      const cancel = ics
        .replace(/METHOD:REQUEST/, 'METHOD:CANCEL')
        .replace(/STATUS:[A-Z]+/, 'STATUS:CANCELLED')
        .replace(/SEQUENCE:(\d+)/, (_, n) => `SEQUENCE:${Number(n) + 1}`);
      await smtpClient(inbound.port).sendMail({
        from: 'intruder@example.com',
        to: c.email,
        subject: 'Cancelled',
        text: 'x',
        icalEvent: { method: 'CANCEL', content: cancel },
      });
      await jobsDone();
      expect(await eventsOf(c.id)).toHaveLength(1);
      await smtpClient(inbound.port).sendMail({
        from: invite.organizer!.email,
        to: c.email,
        subject: 'Cancelled',
        text: 'x',
        icalEvent: { method: 'CANCEL', content: cancel },
      });
      await expect.poll(async () => (await eventsOf(c.id)).length, { timeout: 30_000 }).toBe(0);
    },
  );

  it('keeps malformed calendar mail as a message and makes no event of it', async () => {
    const c = await makeAgentGrant(api);
    await smtpClient(inbound.port).sendMail({
      from: 'organizer@example.com',
      to: c.email,
      subject: 'Broken invite',
      text: 'see attachment',
      icalEvent: { method: 'REQUEST', content: 'BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:garbage\r\nSUMMARY:half' },
    });
    await jobsDone();
    const messages = await api.get(`/v3/grants/${c.id}/messages`);
    expect(messages.body.data.map((m: { subject: string }) => m.subject)).toContain('Broken invite');
    expect(await eventsOf(c.id)).toEqual([]);
  });
});
