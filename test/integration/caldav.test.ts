import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DavClient } from '#shared/dav/client';
import { startRadicale, type RunningRadicale } from '../../scripts/local-stack/radicale';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { useDovecot } from '../support/dovecot';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue } from '../support/queues';
import { rememberSecret } from '../support/secrets';
import { grantNotifications, syncRun as runSync } from '../support/sync-runs';

/**
 * Calendars of an IMAP grant kept on a CalDAV server (a real Radicale, beside a real Dovecot for its
 * mail): connecting with settings.caldav_url, calendars and events written to the server first,
 * changes by another CalDAV client arriving by sync runs as event.* notifications, ETag conflicts,
 * recurring series with exceptions across a DST change expanded by our engine, and the same grant in
 * availability beside an Agent Account and as a scheduler organizer.
 */
const USER = 'cal@example.org';
const PASSWORD = 'caldav test password 7';
const OTHER = 'other@example.org';
const dovecot = useDovecot([
  { user: USER, password: PASSWORD },
  { user: OTHER, password: PASSWORD },
]);
let radicale: RunningRadicale;
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
let fanout: string;
let grant: { id: string; email: string; settings: Record<string, unknown> };
let html: Server;
let htmlUrl: string;

const dav = () =>
  new DavClient({
    fetch: (input, init) => fetch(input, init),
    auth: { type: 'basic', username: USER, password: PASSWORD },
  });
const home = () => `${radicale.url}${encodeURIComponent(USER)}/`;
const auth = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
/** What another CalDAV client does: raw requests to Radicale. */
async function raw(method: string, url: string, body?: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method, body, headers: { authorization: auth, ...headers } });
  return { status: response.status, etag: response.headers.get('etag'), text: await response.text() };
}

const syncRun = () => runSync(applicationId, grant.id);

const notifications = () => grantNotifications(fanout, grant.id);

const connect = (settings: Record<string, unknown>) =>
  api.post('/v3/connect/custom', {
    provider: 'imap',
    settings: {
      imap_username: USER,
      imap_password: PASSWORD,
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      smtp_host: '127.0.0.1',
      smtp_port: dovecot.submissionPort,
      ...settings,
    },
  });

beforeAll(async () => {
  rememberSecret(PASSWORD, 'the CalDAV test password');
  radicale = await startRadicale({ accounts: [{ user: USER, password: PASSWORD }] });
  // The account's calendar before it is connected: the primary one.
  await dav().makeCalendar(`${home()}home/`, { name: 'Home' });
  await dav().makeAddressBook(`${home()}contacts/`, { name: 'Contacts' });
  html = createServer((_, response) =>
    response.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><p>Welcome</p>'),
  );
  await new Promise<void>((resolve) => html.listen(0, '127.0.0.1', resolve));
  htmlUrl = `http://127.0.0.1:${(html.address() as AddressInfo).port}/`;
  fanout = await createTestQueue('caldav-fanout');
  Object.assign(process.env, {
    FANOUT_QUEUE_URL: fanout,
    MAIL_SYNC_QUEUE_URL: await createTestQueue('caldav-mail-sync'),
  });
  gateway = await startGateway();
  const app = await makeApplication('caldav');
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  const response = await connect({ caldav_url: radicale.url, carddav_url: radicale.url });
  expect(response.status, response.text).toBe(201);
  grant = response.body.data;
  await jobsDone();
  await syncRun();
  await notifications();
});

afterAll(async () => {
  await gateway?.close();
  await radicale?.stop();
  await new Promise<void>((resolve) => (html ? html.close(() => resolve()) : resolve()));
});

const at = (iso: string) => Date.parse(`${iso}:00Z`) / 1000;

describe('connecting an IMAP grant with a CalDAV server', () => {
  it('discovers the calendar home with the account credentials and keeps it in the settings (no password answered)', () => {
    expect(grant.settings).toMatchObject({
      caldav_url: radicale.url,
      calendar_home: home(),
      carddav_url: radicale.url,
      addressbook_home: home(),
    });
    expect(JSON.stringify(grant)).not.toContain(PASSWORD);
  });

  it('refuses a server that is not CalDAV, or not reachable, with a 400 naming it, and creates no grant', async () => {
    const before = (await api.get('/v3/grants')).body.data.length;
    const notDav = await connect({ caldav_url: htmlUrl });
    expect(notDav.status).toBe(400);
    expect(notDav.body.error.message).toMatch(
      /settings\.caldav_url \(127\.0\.0\.1:\d+\): the server is not a CalDAV\/CardDAV server/,
    );
    html.close();
    const closed = await connect({ caldav_url: htmlUrl });
    expect(closed.status).toBe(400);
    expect(closed.body.error.message).toContain('could not be reached');
    expect((await connect({ caldav_url: 'ftp://example.org/' })).body.error.message).toContain(
      "'settings.caldav_url' must be an https URL",
    );
    // The DAV server knows the account under another password than its mail server: refused, by name.
    await radicale.addAccount(OTHER, 'not the mail password');
    const refused = await api.post('/v3/connect/custom', {
      provider: 'imap',
      settings: {
        imap_username: OTHER,
        imap_password: PASSWORD,
        imap_host: '127.0.0.1',
        imap_port: dovecot.imapPort,
        smtp_host: '127.0.0.1',
        smtp_port: dovecot.submissionPort,
        carddav_url: radicale.url,
      },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(
      /settings\.carddav_url \(127\.0\.0\.1:\d+\): the server refused the credentials/,
    );
    expect((await api.get('/v3/grants')).body.data.length).toBe(before);
  });
});

describe('calendars and events on the server', () => {
  it('lists the server calendar as primary; creates, renames and deletes calendars on the server', async () => {
    const listed = await api.get(`/v3/grants/${grant.id}/calendars`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data).toEqual([expect.objectContaining({ name: 'Home', is_primary: true })]);
    const created = await api.post(`/v3/grants/${grant.id}/calendars`, {
      name: 'Work',
      hex_color: '#112233',
      timezone: 'Europe/Berlin',
    });
    expect(created.status, created.text).toBe(201);
    const onServer = async () =>
      (await dav().listCollections(home())).filter((c) => c.kind === 'calendar').map((c) => c.displayName);
    expect(await onServer()).toEqual(expect.arrayContaining(['Home', 'Work']));
    const renamed = await api.put(`/v3/grants/${grant.id}/calendars/${created.body.data.id}`, { name: 'Work (team)' });
    expect(renamed.body.data.name).toBe('Work (team)');
    expect(await onServer()).toContain('Work (team)');
    expect((await api.delete(`/v3/grants/${grant.id}/calendars/${created.body.data.id}`)).status).toBe(200);
    expect(await onServer()).toEqual(['Home']);
    expect((await api.delete(`/v3/grants/${grant.id}/calendars/primary`)).status).toBe(400);
  });

  it('writes events to the server first (create, update, delete), kept under the object URL the server names', async () => {
    const created = await api.post(`/v3/grants/${grant.id}/events?calendar_id=primary`, {
      title: 'Dentist',
      when: { start_time: at('2026-12-10T09:00'), end_time: at('2026-12-10T10:00') },
    });
    expect(created.status, created.text).toBe(201);
    const event = created.body.data;
    const objects = await dav().listObjects(`${home()}home/`);
    expect(objects).toHaveLength(1);
    const text = async () => (await dav().getObject(objects[0]!.url)).data;
    expect(await text()).toContain('SUMMARY:Dentist');
    expect(await text()).not.toContain('METHOD:');
    const updated = await api.put(`/v3/grants/${grant.id}/events/${event.id}?calendar_id=primary`, {
      title: 'Dentist (moved)',
      when: { start_time: at('2026-12-11T09:00'), end_time: at('2026-12-11T10:00') },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(await text()).toContain('SUMMARY:Dentist (moved)');
    expect((await api.delete(`/v3/grants/${grant.id}/events/${event.id}?calendar_id=primary`)).status).toBe(200);
    expect(await dav().listObjects(`${home()}home/`)).toEqual([]);
    await notifications();
  });

  it("invites participants by iMIP over the grant's own SMTP server", async () => {
    const created = await api.post(`/v3/grants/${grant.id}/events?calendar_id=primary`, {
      title: 'Kickoff',
      when: { start_time: at('2026-12-14T09:00'), end_time: at('2026-12-14T10:00') },
      participants: [{ email: 'guest@elsewhere.example' }],
    });
    expect(created.status, created.text).toBe(201);
    await jobsDone();
    const [mail] = await dovecot.sink.waitFor('guest@elsewhere.example', 20_000);
    expect(mail).toBeDefined();
    const raw = await dovecot.sink.raw(mail!.id);
    expect(raw).toContain('METHOD:REQUEST');
    expect(raw).toContain('SUMMARY:Kickoff');
    expect(raw).toMatch(/^From: .*cal@example\.org/m);
    await api.delete(`/v3/grants/${grant.id}/events/${created.body.data.id}?calendar_id=primary`);
    await jobsDone();
    await notifications();
  });

  it('an event another client changes or removes arrives by the next sync run as event.updated / event.deleted', async () => {
    const url = `${home()}home/other-client-1.ics`;
    const ics = (summary: string) =>
      [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//Other//Client//EN',
        'BEGIN:VEVENT',
        'UID:other-client-1@example.org',
        'DTSTAMP:20261101T000000Z',
        'DTSTART:20261215T140000Z',
        'DTEND:20261215T150000Z',
        `SUMMARY:${summary}`,
        'END:VEVENT',
        'END:VCALENDAR',
        '',
      ].join('\r\n');
    expect((await raw('PUT', url, ics('Planning'), { 'content-type': 'text/calendar' })).status).toBe(201);
    await syncRun();
    const created = (await notifications()).filter((n) => n.type.startsWith('event.'));
    expect(created.map((n) => [n.type, n.data.object.title])).toEqual([['event.created', 'Planning']]);
    const id = created[0]!.data.object.id;
    expect((await raw('PUT', url, ics('Planning (agenda)'), { 'content-type': 'text/calendar' })).status).toBe(201);
    await syncRun();
    expect((await notifications()).map((n) => [n.type, n.data.object.id, n.data.object.title])).toEqual([
      ['event.updated', id, 'Planning (agenda)'],
    ]);
    expect((await api.get(`/v3/grants/${grant.id}/events/${id}?calendar_id=primary`)).body.data.title).toBe(
      'Planning (agenda)',
    );
    // Nothing changed: the next run announces nothing.
    await syncRun();
    expect(await notifications()).toEqual([]);
    expect((await raw('DELETE', url)).status).toBe(200);
    await syncRun();
    expect((await notifications()).map((n) => [n.type, n.data.object.id])).toEqual([['event.deleted', id]]);
    expect((await api.get(`/v3/grants/${grant.id}/events/${id}?calendar_id=primary`)).status).toBe(404);
  });

  it('reads the calendar whole when the server no longer knows its sync token, and announces only what changed', async () => {
    const { getSyncState } = await import('#shared/db/mail-sync');
    const { dynamo, TABLE_NAME } = await import('#shared/aws/dynamodb');
    const { mailSyncKey } = await import('#shared/db/keys');
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    const primary = (await api.get(`/v3/grants/${grant.id}/calendars/primary`)).body.data.id as string;
    expect((await getSyncState(grant.id as never))!.dav!.calendars[primary]!.token).toMatch(/^http/);
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: mailSyncKey(grant.id as never),
        UpdateExpression: 'SET dav.calendars.#c.#t = :t',
        ExpressionAttributeNames: { '#c': primary, '#t': 'token' },
        ExpressionAttributeValues: {
          ':t': 'http://radicale.org/ns/sync/0000000000000000000000000000000000000000000000000000000000000000',
        },
      }),
    );
    const url = `${home()}home/after-reset.ics`;
    const ics = [
      'BEGIN:VCALENDAR',
      'VERSION:2.0',
      'PRODID:-//x//EN',
      'BEGIN:VEVENT',
      'UID:after-reset',
      'DTSTAMP:20261101T000000Z',
      'DTSTART:20261218T100000Z',
      'DTEND:20261218T110000Z',
      'SUMMARY:After the reset',
      'END:VEVENT',
      'END:VCALENDAR',
      '',
    ].join('\r\n');
    expect((await raw('PUT', url, ics, { 'content-type': 'text/calendar' })).status).toBe(201);
    await syncRun();
    expect((await notifications()).map((n) => [n.type, n.data.object.title])).toEqual([
      ['event.created', 'After the reset'],
    ]);
    // A new token was kept: the next change is read from it.
    expect((await getSyncState(grant.id as never))!.dav!.calendars[primary]!.token).not.toMatch(/0{64}$/);
    expect((await raw('DELETE', url)).status).toBe(200);
    await syncRun();
    expect((await notifications()).map((n) => n.type)).toEqual(['event.deleted']);
  });

  it('refuses to overwrite an event another client changed first (412 → 409), and keeps the server version', async () => {
    const created = await api.post(`/v3/grants/${grant.id}/events?calendar_id=primary`, {
      title: 'Review',
      when: { start_time: at('2026-12-16T09:00'), end_time: at('2026-12-16T10:00') },
    });
    const id = created.body.data.id as string;
    const [object] = (await dav().listObjects(`${home()}home/`)).filter((o) => o.url.includes(id));
    const theirs = (await dav().getObject(object!.url)).data.replace('SUMMARY:Review', 'SUMMARY:Review (theirs)');
    expect((await raw('PUT', object!.url, theirs, { 'content-type': 'text/calendar' })).status).toBe(201);
    const mine = await api.put(`/v3/grants/${grant.id}/events/${id}?calendar_id=primary`, { title: 'Review (mine)' });
    expect(mine.status, mine.text).toBe(409);
    expect(mine.body.error.message).toContain('changed on the calendar server by another client');
    expect((await dav().getObject(object!.url)).data).toContain('SUMMARY:Review (theirs)');
    expect((await api.get(`/v3/grants/${grant.id}/events/${id}?calendar_id=primary`)).body.data.title).toBe(
      'Review (theirs)',
    );
    // Read again, the change goes through.
    expect(
      (await api.put(`/v3/grants/${grant.id}/events/${id}?calendar_id=primary`, { title: 'Review (mine)' })).status,
    ).toBe(200);
    expect((await dav().getObject(object!.url)).data).toContain('SUMMARY:Review (mine)');
    await api.delete(`/v3/grants/${grant.id}/events/${id}?calendar_id=primary`);
    await notifications();
  });

  it('expands a weekly series with a moved and a removed occurrence across the DST change, in its zone', async () => {
    // Mondays 9:00 in Berlin from 2026-03-16, six times; Europe/Berlin leaves winter time on 2026-03-29.
    const url = `${home()}home/series-1.ics`;
    const series = [
      'BEGIN:VCALENDAR',
      'VERSION:2.0',
      'PRODID:-//Other//Client//EN',
      'BEGIN:VTIMEZONE',
      'TZID:Europe/Berlin',
      'BEGIN:DAYLIGHT',
      'TZOFFSETFROM:+0100',
      'TZOFFSETTO:+0200',
      'DTSTART:19700329T020000',
      'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU',
      'END:DAYLIGHT',
      'BEGIN:STANDARD',
      'TZOFFSETFROM:+0200',
      'TZOFFSETTO:+0100',
      'DTSTART:19701025T030000',
      'RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU',
      'END:STANDARD',
      'END:VTIMEZONE',
      'BEGIN:VEVENT',
      'UID:series-1@example.org',
      'DTSTAMP:20261101T000000Z',
      'DTSTART;TZID=Europe/Berlin:20260316T090000',
      'DTEND;TZID=Europe/Berlin:20260316T093000',
      'RRULE:FREQ=WEEKLY;COUNT=6',
      'EXDATE;TZID=Europe/Berlin:20260406T090000',
      'SUMMARY:Standup',
      'END:VEVENT',
      'BEGIN:VEVENT',
      'UID:series-1@example.org',
      'DTSTAMP:20261101T000000Z',
      'RECURRENCE-ID;TZID=Europe/Berlin:20260330T090000',
      'DTSTART;TZID=Europe/Berlin:20260330T110000',
      'DTEND;TZID=Europe/Berlin:20260330T113000',
      'SUMMARY:Standup (late)',
      'END:VEVENT',
      'END:VCALENDAR',
      '',
    ].join('\r\n');
    expect((await raw('PUT', url, series, { 'content-type': 'text/calendar' })).status).toBe(201);
    await syncRun();
    const list = await api.get(
      `/v3/grants/${grant.id}/events?calendar_id=primary&expand_recurring=true&start=${at('2026-03-01T00:00')}&end=${at('2026-05-01T00:00')}`,
    );
    expect(list.status, list.text).toBe(200);
    const utc = (s: number) => new Date(s * 1000).toISOString().slice(0, 16);
    expect(
      list.body.data.map((e: { title: string; when: { start_time: number } }) => [utc(e.when.start_time), e.title]),
    ).toEqual([
      ['2026-03-16T08:00', 'Standup'],
      ['2026-03-23T08:00', 'Standup'],
      // Summer time from here: 9:00 in Berlin is 7:00 UTC; the 30th was moved to 11:00, the 6th removed.
      ['2026-03-30T09:00', 'Standup (late)'],
      ['2026-04-13T07:00', 'Standup'],
      ['2026-04-20T07:00', 'Standup'],
    ]);
    await notifications();
  });

  it('imports that series once, as its master, with its moved occurrence: events/import, never expanded', async () => {
    // Act: the window of the series synced by the test before.
    const imported = await api.get(
      `/v3/grants/${grant.id}/events/import?calendar_id=primary&start=${at('2026-03-01T00:00')}&end=${at('2026-05-01T00:00')}`,
    );

    // Assess
    expect(imported.status, imported.text).toBe(200);
    type Imported = { id: string; title: string; recurrence?: string[]; master_event_id?: string };
    const standups = (imported.body.data as Imported[]).filter((e) => e.title.startsWith('Standup'));
    expect(standups.map((e) => e.title).sort()).toEqual(['Standup', 'Standup (late)']);
    const master = standups.find((e) => e.title === 'Standup')!;
    expect(master.recurrence).toEqual(expect.arrayContaining([expect.stringMatching(/^RRULE:FREQ=WEEKLY;COUNT=6/)]));
    expect(standups.find((e) => e.title === 'Standup (late)')!.master_event_id).toBe(master.id);
  });

  it('skips an object it cannot read as an event (a task: no VEVENT) and logs it, while the rest of the calendar syncs', async () => {
    const good = `${home()}home/fine-1.ics`;
    await raw(
      'PUT',
      good,
      [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//x//EN',
        'BEGIN:VEVENT',
        'UID:fine-1',
        'DTSTAMP:20261101T000000Z',
        'DTSTART:20261217T100000Z',
        'DTEND:20261217T110000Z',
        'SUMMARY:Fine',
        'END:VEVENT',
        'END:VCALENDAR',
        '',
      ].join('\r\n'),
      {
        'content-type': 'text/calendar',
      },
    );
    // Radicale refuses malformed iCalendar on PUT: an object it accepts and our reader cannot store, a task.
    await raw(
      'PUT',
      `${home()}home/odd-1.ics`,
      [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//x//EN',
        'BEGIN:VTODO',
        'UID:odd-1',
        'DTSTAMP:20261101T000000Z',
        'SUMMARY:A task',
        'END:VTODO',
        'END:VCALENDAR',
        '',
      ].join('\r\n'),
      {
        'content-type': 'text/calendar',
      },
    );
    await syncRun();
    const titles = (await notifications()).map((n) => n.data.object.title);
    expect(titles).toContain('Fine');
    const list = await api.get(
      `/v3/grants/${grant.id}/events?calendar_id=primary&start=${at('2026-12-17T00:00')}&end=${at('2026-12-18T00:00')}`,
    );
    expect(list.body.data.map((e: { title: string }) => e.title)).toEqual(['Fine']);
  });
});

describe('contacts on the CardDAV server', () => {
  it('creates, changes and deletes contacts on the server; a vCard another client edits arrives as contact.updated', async () => {
    const group = await api.post(`/v3/grants/${grant.id}/contacts/groups`, { name: 'Friends' });
    expect(group.status, group.text).toBe(200);
    const created = await api.post(`/v3/grants/${grant.id}/contacts`, {
      given_name: 'Ann',
      surname: 'Lee',
      emails: [{ email: 'ann@example.net', type: 'work' }],
      groups: [{ id: group.body.data.id }],
    });
    expect(created.status, created.text).toBe(200);
    const contact = created.body.data;
    expect(contact).toMatchObject({ given_name: 'Ann', source: 'address_book', groups: [{ id: group.body.data.id }] });
    expect(contact.href).toBeUndefined();
    const cards = async () =>
      Promise.all(
        (await dav().listObjects(`${home()}contacts/`)).map(async (o) => ({
          url: o.url,
          text: (await dav().getObject(o.url)).data,
        })),
      );
    const card = (await cards()).find((c) => c.text.includes('ann@example.net'))!;
    expect(card.text).toContain('FN:Ann Lee');
    expect(
      (await cards()).some((c) => c.text.includes('X-ADDRESSBOOKSERVER-KIND:group') && c.text.includes('FN:Friends')),
    ).toBe(true);
    await syncRun();
    await notifications();

    const edited = card.text.replace('FN:Ann Lee', 'FN:Ann Lee-Smith').replace(/^N:Lee;/m, 'N:Lee-Smith;');
    expect((await raw('PUT', card.url, edited, { 'content-type': 'text/vcard' })).status).toBe(201);
    await syncRun();
    expect((await notifications()).map((n) => [n.type, n.data.object.id, n.data.object.surname])).toEqual([
      ['contact.updated', contact.id, 'Lee-Smith'],
    ]);
    expect(
      (await api.get(`/v3/grants/${grant.id}/contacts?group=${group.body.data.id}`)).body.data.map(
        (c: { id: string }) => c.id,
      ),
    ).toEqual([contact.id]);

    expect((await api.put(`/v3/grants/${grant.id}/contacts/${contact.id}`, { job_title: 'Engineer' })).status).toBe(
      200,
    );
    expect((await cards()).find((c) => c.url === card.url)!.text).toContain('TITLE:Engineer');
    expect((await api.delete(`/v3/grants/${grant.id}/contacts/${contact.id}`)).status).toBe(200);
    expect((await cards()).some((c) => c.url === card.url)).toBe(false);
    await notifications();
  });
});

describe('across providers', () => {
  it('one collective availability over an Agent Account and the CalDAV grant', async () => {
    const agent = await makeAgentGrant(api);
    const event = (grantId: string, title: string, from: string, to: string) =>
      api.post(`/v3/grants/${grantId}/events?calendar_id=primary`, {
        title,
        when: { start_time: at(from), end_time: at(to) },
      });
    expect((await event(agent.id, 'Agent busy', '2026-12-21T09:00', '2026-12-21T10:00')).status).toBe(201);
    expect((await event(grant.id, 'CalDAV busy', '2026-12-21T10:00', '2026-12-21T11:00')).status).toBe(201);
    const response = await api.post('/v3/calendars/availability', {
      start_time: at('2026-12-21T09:00'),
      end_time: at('2026-12-21T12:00'),
      duration_minutes: 60,
      interval_minutes: 60,
      participants: [{ email: agent.email }, { email: grant.email }],
      availability_rules: { availability_method: 'collective' },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.time_slots.map((s: { start_time: number }) => s.start_time)).toEqual([
      at('2026-12-21T11:00'),
    ]);
  });

  it('a booking on a CalDAV organizer creates the event on its CalDAV server', async () => {
    const created = await api.post(`/v3/grants/${grant.id}/scheduling/configurations`, {
      name: 'Intro',
      participants: [
        {
          email: grant.email,
          name: 'Cal',
          is_organizer: true,
          availability: { calendar_ids: ['primary'] },
          booking: { calendar_id: 'primary' },
        },
      ],
      availability: { duration_minutes: 30, interval_minutes: 30 },
      event_booking: { title: 'Intro call' },
      scheduler: { min_booking_notice: 0, available_days_in_future: 30 },
    });
    expect(created.status, created.text).toBe(201);
    const day = (Math.floor(Date.now() / 1000 / 86_400) + 2) * 86_400;
    const start = day + 13 * 3600;
    const booked = await apiClient(gateway.url).post(
      `/v3/scheduling/bookings?configuration_id=${created.body.data.id}`,
      {
        start_time: start,
        end_time: start + 1800,
        guest: { name: 'Gus', email: 'gus@guest.example.com' },
      },
    );
    expect(booked.status, booked.text).toBe(201);
    const objects = await dav().listObjects(`${home()}home/`);
    const texts = await Promise.all(objects.map(async (o) => (await dav().getObject(o.url)).data));
    expect(texts.filter((t) => t.includes('SUMMARY:Intro call'))).toHaveLength(1);
    const events = await api.get(`/v3/grants/${grant.id}/events?calendar_id=primary&start=${day}&end=${day + 86_400}`);
    expect(events.body.data.map((e: { id: string; title: string }) => [e.id, e.title])).toEqual([
      [booked.body.data.event_id, 'Intro call'],
    ]);
  });
});
