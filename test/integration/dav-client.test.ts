import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DavClient, DavError, PreconditionFailed, SyncTokenInvalid, type DavAuth } from '#shared/dav/client';
import { parseVCard, writeContactVCard, writeGroupVCard } from '#shared/dav/vcard';
import { guardedFetch } from '#shared/net/fetch';
import { freePort } from '../../scripts/local-stack/index';
import { startRadicale, type RunningRadicale } from '../../scripts/local-stack/radicale';
import { rememberSecret } from '../support/secrets';

/**
 * The DAV client (shared/dav/client.ts) against a real Radicale started for this file: discovery
 * from the server root, typed errors (bad password, a web server that is no DAV server, nothing
 * listening), calendars and address books, objects under ETag preconditions, RFC 6578 sync with
 * changes made by another client, and multiget of many hrefs.
 */
const PASSWORD = 'radicale test password';
let radicale: RunningRadicale;
let html: Server;
let htmlUrl: string;

beforeAll(async () => {
  rememberSecret(PASSWORD, 'the Radicale test account password');
  radicale = await startRadicale({ accounts: [{ user: 'ann', password: PASSWORD }] });
  await radicale.addAccount('bob', PASSWORD);
  // A web server that answers HTML to everything (what a mistyped server URL often reaches), and a few
  // hand-written DAV answers other servers give: other prefixes, broken XML, redirects elsewhere.
  html = createServer((request, response) => {
    const fake = FAKE_DAV[request.url ?? ''];
    if (fake) return response.writeHead(fake.status, fake.headers).end(fake.body);
    response.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><html><body>Welcome</body></html>');
  });
  await new Promise<void>((resolve) => html.listen(0, '127.0.0.1', resolve));
  htmlUrl = `http://127.0.0.1:${(html.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await radicale?.stop();
  await new Promise<void>((resolve) => (html ? html.close(() => resolve()) : resolve()));
});

const XML = { 'content-type': 'application/xml; charset=utf-8', dav: '1, 2, calendar-access' };
const FAKE_DAV: Record<string, { status: number; headers: Record<string, string>; body: string }> = {
  // Upper-case D:, cal: for CalDAV, a default namespace on an inner element, a relative href, entities.
  '/prefixed/': {
    status: 207,
    headers: XML,
    body: `<?xml version="1.0"?>
<D:multistatus xmlns:D="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav" xmlns:CS="http://calendarserver.org/ns/">
  <D:response><D:href>/prefixed/</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>
  <D:response>
    <D:href>cal%20one/</D:href>
    <D:propstat>
      <D:prop>
        <D:resourcetype><D:collection/><cal:calendar/></D:resourcetype>
        <displayname xmlns="DAV:">Caf&#233; &amp; more</displayname>
        <cal:supported-calendar-component-set><cal:comp name="VEVENT"/><cal:comp name="VTODO"/></cal:supported-calendar-component-set>
        <x:calendar-color xmlns:x="http://apple.com/ns/ical/">#112233</x:calendar-color>
        <CS:getctag>ctag-1</CS:getctag>
      </D:prop>
      <D:status>HTTP/1.1 200 OK</D:status>
    </D:propstat>
    <D:propstat><D:prop><cal:calendar-description/></D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>
  </D:response>
</D:multistatus>`,
  },
  '/broken/': {
    status: 207,
    headers: XML,
    body: '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response><d:href>/x</d:response>',
  },
  '/elsewhere/': { status: 301, headers: { location: 'https://calendar.example.com/dav/' }, body: '' },
  '/loop/': { status: 302, headers: { location: '/loop/' }, body: '' },
};

const basic = (username = 'ann', password = PASSWORD): DavAuth => ({ type: 'basic', username, password });
const client = (auth: DavAuth = basic()) => new DavClient({ fetch: (input, init) => fetch(input, init), auth });
const authHeader = (user = 'ann') => `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`;

/** What "another client" does: a raw request to Radicale, no DavClient involved. */
async function raw(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  const response = await fetch(new URL(path, radicale.url), {
    method,
    body,
    headers: { authorization: authHeader(), ...headers },
  });
  return { status: response.status, etag: response.headers.get('etag'), text: await response.text() };
}

function event(uid: string, summary: string, start = '20260105T100000Z', end = '20260105T110000Z'): string {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//Switchboard//Test//EN',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20260101T000000Z',
    `DTSTART:${start}`,
    `DTEND:${end}`,
    `SUMMARY:${summary}`,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');
}

async function rejection(promise: Promise<unknown>): Promise<DavError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DavError);
  return error as DavError;
}

const TIMEZONE = [
  'BEGIN:VCALENDAR',
  'VERSION:2.0',
  'PRODID:-//Switchboard//Test//EN',
  'BEGIN:VTIMEZONE',
  'TZID:Europe/Berlin',
  'BEGIN:STANDARD',
  'DTSTART:19701025T030000',
  'RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU',
  'TZOFFSETFROM:+0200',
  'TZOFFSETTO:+0100',
  'END:STANDARD',
  'BEGIN:DAYLIGHT',
  'DTSTART:19700329T020000',
  'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU',
  'TZOFFSETFROM:+0100',
  'TZOFFSETTO:+0200',
  'END:DAYLIGHT',
  'END:VTIMEZONE',
  'END:VCALENDAR',
  '',
].join('\r\n');

describe('discovery', () => {
  it('finds the calendar and address book homes from the server root (well-known, then principal)', async () => {
    for (const protocol of ['caldav', 'carddav'] as const) {
      expect(await client().discover(radicale.url, protocol)).toEqual({
        principal: `${radicale.url}ann/`,
        homes: [`${radicale.url}ann/`],
      });
    }
    // bob's credentials lead to bob's home from the same URL.
    expect((await client(basic('bob')).discover(radicale.url, 'caldav')).homes).toEqual([`${radicale.url}bob/`]);
  });

  it('accepts a principal or home URL, and a collection URL as is', async () => {
    expect((await client().discover(`${radicale.url}ann/`, 'caldav')).homes).toEqual([`${radicale.url}ann/`]);
    await client().makeCalendar(`${radicale.url}ann/discover-me/`, { name: 'Direct' });
    expect((await client().discover(`${radicale.url}ann/discover-me/`, 'caldav')).homes).toEqual([
      `${radicale.url}ann/discover-me/`,
    ]);
    const listed = await client().listCollections(`${radicale.url}ann/discover-me/`);
    expect(listed.map((one) => one.displayName)).toEqual(['Direct']);
  });

  it('works through the guarded fetch production uses (redirects are not followed by it)', async () => {
    const guarded = guardedFetch({
      policy: { local: true },
      timeoutMs: 5000,
      maxResponseBytes: 5_000_000,
      userAgent: 'switchboard-test/1',
    });
    const dav = new DavClient({ fetch: guarded, auth: basic() });
    expect((await dav.discover(radicale.url, 'caldav')).homes).toEqual([`${radicale.url}ann/`]);
    // Deployed policy: plain http to loopback is refused before any connection.
    const deployed = new DavClient({
      fetch: guardedFetch({ policy: { local: false }, timeoutMs: 5000, maxResponseBytes: 1000, userAgent: 'x' }),
      auth: basic(),
    });
    const error = await rejection(deployed.discover(radicale.url, 'caldav'));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toContain('127.0.0.1');
  });

  it('says unauthorized for a wrong password or an unknown token, naming the host and status', async () => {
    const error = await rejection(client(basic('ann', 'wrong')).discover(radicale.url, 'caldav'));
    expect(error.kind).toBe('unauthorized');
    expect(error.status).toBe(401);
    expect(error.message).toContain(`127.0.0.1:${radicale.port}`);
    expect(error.message).toContain('401');
    expect(
      (await rejection(client({ type: 'bearer', token: 'nope' }).listCollections(`${radicale.url}ann/`))).kind,
    ).toBe('unauthorized');
    // Another user's home: authenticated, but not allowed (owner_only).
    expect((await rejection(client(basic('bob')).listCollections(`${radicale.url}ann/`))).kind).toBe('unauthorized');
  });

  it('says not_dav for a web server that is no DAV server', async () => {
    const error = await rejection(client().discover(htmlUrl, 'caldav'));
    expect(error.kind).toBe('not_dav');
    expect(error.message).toContain(new URL(htmlUrl).host);
    expect(error.message).toContain('200');
    expect((await rejection(client().listCollections(`${htmlUrl}calendars/`))).kind).toBe('not_dav');
  });

  it('reads answers whatever prefixes and namespaces the server uses, resolving relative hrefs', async () => {
    const [calendar, ...rest] = await client().listCollections(`${htmlUrl}prefixed/`);
    expect(rest).toEqual([]);
    expect(calendar).toMatchObject({
      url: `${htmlUrl}prefixed/cal%20one/`,
      kind: 'calendar',
      displayName: 'Café & more',
      components: ['VEVENT', 'VTODO'],
      color: '#112233',
      ctag: 'ctag-1',
      description: undefined,
    });
  });

  it('says bad_response for malformed XML, and not_dav for redirects to another server or in circles', async () => {
    const broken = await rejection(client().listCollections(`${htmlUrl}broken/`));
    expect(broken.kind).toBe('bad_response');
    expect(broken.message).toContain('malformed XML');
    const elsewhere = await rejection(client().discover(`${htmlUrl}elsewhere/`, 'caldav'));
    expect(elsewhere.kind).toBe('not_dav');
    expect(elsewhere.message).toContain('calendar.example.com');
    const loop = await rejection(client().discover(`${htmlUrl}loop/`, 'caldav'));
    expect(loop.kind).toBe('not_dav');
    expect(loop.message).toContain('more than 3 times');
  });

  it('says unreachable when nothing listens', async () => {
    const port = await freePort();
    const error = await rejection(client().discover(`http://127.0.0.1:${port}/`, 'caldav'));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toContain(`127.0.0.1:${port}`);
  });
});

describe('calendars', () => {
  const home = () => `${radicale.url}ann/`;

  it('creates a calendar with MKCALENDAR and lists it with its properties', async () => {
    const url = `${home()}work/`;
    await client().makeCalendar(url, {
      name: 'Work',
      color: '#FF0000FF',
      description: 'Team & <projects>',
      timezone: TIMEZONE,
    });
    const calendars = await client().listCollections(home());
    const work = calendars.find((one) => one.url === url);
    expect(work).toMatchObject({
      kind: 'calendar',
      displayName: 'Work',
      color: '#FF0000FF',
      description: 'Team & <projects>',
      components: ['VEVENT'],
      timezoneId: 'Europe/Berlin',
    });
    expect(work!.timezone).toContain('BEGIN:VTIMEZONE');
    expect(work!.ctag).toBeTruthy();
    expect(work!.syncToken).toMatch(/^http:\/\/radicale\.org\/ns\/sync\//);
    // Creating it again: the URL is taken.
    expect((await rejection(client().makeCalendar(url, { name: 'Again' }))).kind).toMatch(
      /conflict|precondition_failed/,
    );
  });

  it('renames, recolors and describes a calendar with PROPPATCH, and deletes it', async () => {
    const url = `${home()}rename-me/`;
    await client().makeCalendar(url, { name: 'Before' });
    await client().updateCollection(url, 'calendar', {
      name: 'After',
      color: '#00FF00FF',
      description: 'Now described',
    });
    const [after] = (await client().listCollections(home())).filter((one) => one.url === url);
    expect(after).toMatchObject({ displayName: 'After', color: '#00FF00FF', description: 'Now described' });
    await client().deleteCollection(url);
    expect((await client().listCollections(home())).some((one) => one.url === url)).toBe(false);
    expect((await rejection(client().deleteCollection(url))).kind).toBe('not_found');
  });

  it('puts, gets, updates and deletes an event under ETag preconditions', async () => {
    const calendar = `${home()}etags/`;
    await client().makeCalendar(calendar, { name: 'ETags' });
    // Not named after the UID: hrefs are whatever the server or another client chose.
    const url = `${calendar}some%20name-${Date.now()}.ics`;
    const etag = await client().putObject(url, event('uid-etag-1', 'First'), 'text/calendar; charset=utf-8', {
      create: true,
    });
    expect(etag).toMatch(/^"/);
    const read = await client().getObject(url);
    expect(read.etag).toBe(etag);
    expect(read.data).toContain('SUMMARY:First');

    // Creating where something exists is a precondition failure, not an overwrite.
    const exists = await rejection(
      client().putObject(url, event('uid-etag-1', 'Clobber'), 'text/calendar', { create: true }),
    );
    expect(exists).toBeInstanceOf(PreconditionFailed);
    expect(exists.kind).toBe('precondition_failed');

    const updated = await client().putObject(url, event('uid-etag-1', 'Second'), 'text/calendar', { etag: etag! });
    expect(updated).toBeTruthy();
    expect(updated).not.toBe(etag);

    // The old ETag is stale now: neither update nor delete goes through, and the data stays.
    const stale = await rejection(
      client().putObject(url, event('uid-etag-1', 'Stale'), 'text/calendar', { etag: etag! }),
    );
    expect(stale.kind).toBe('precondition_failed');
    expect(stale.status).toBe(412);
    expect(stale.message).toContain('412');
    expect((await rejection(client().deleteObject(url, etag))).kind).toBe('precondition_failed');
    expect((await client().getObject(url)).data).toContain('SUMMARY:Second');

    const listed = await client().listObjects(calendar);
    expect(listed).toEqual([{ url, etag: updated, contentType: expect.stringContaining('text/calendar') }]);

    await client().deleteObject(url, updated);
    expect((await rejection(client().getObject(url))).kind).toBe('not_found');
  });

  it('syncs with sync-collection: the initial listing, then another client’s changes and deletions', async () => {
    const calendar = `${home()}sync/`;
    await client().makeCalendar(calendar, { name: 'Sync' });
    const keep = `${calendar}keep.ics`;
    const change = `${calendar}change.ics`;
    const remove = `${calendar}remove.ics`;
    for (const [url, uid] of [
      [keep, 'sync-keep'],
      [change, 'sync-change'],
      [remove, 'sync-remove'],
    ] as const) {
      await client().putObject(url, event(uid, uid), 'text/calendar', { create: true });
    }

    const initial = await client().syncCollection(calendar);
    expect(initial.changed.map((one) => one.url).sort()).toEqual([change, keep, remove]);
    expect(initial.changed.every((one) => one.etag?.startsWith('"'))).toBe(true);
    expect(initial.deleted).toEqual([]);
    expect(initial.truncated).toBe(false);

    // Nothing happened: nothing to report, and the token may stay.
    const quiet = await client().syncCollection(calendar, initial.token);
    expect(quiet).toMatchObject({ changed: [], deleted: [] });

    const added = `${calendar}added-elsewhere.ics`;
    expect(
      (await raw('PUT', new URL(added).pathname, event('sync-added', 'Added'), { 'content-type': 'text/calendar' }))
        .status,
    ).toBe(201);
    expect(
      (await raw('PUT', new URL(change).pathname, event('sync-change', 'Changed'), { 'content-type': 'text/calendar' }))
        .status,
    ).toBe(201);
    expect((await raw('DELETE', new URL(remove).pathname)).status).toBe(200);

    const next = await client().syncCollection(calendar, quiet.token);
    expect(next.changed.map((one) => one.url).sort()).toEqual([added, change]);
    expect(next.deleted).toEqual([remove]);
    expect(next.token).not.toBe(initial.token);
    const changedEtag = next.changed.find((one) => one.url === change)!.etag;
    expect(changedEtag).toBe((await client().getObject(change)).etag);

    // The ctag (the fallback when sync is not possible) moved too.
    const ctags = await client().listCollections(home());
    expect(ctags.find((one) => one.url === calendar)?.syncToken).toBe(next.token);
  });

  it('throws SyncTokenInvalid for a token the server does not know', async () => {
    const calendar = `${home()}badtoken/`;
    await client().makeCalendar(calendar, { name: 'Bad token' });
    for (const token of [
      'http://radicale.org/ns/sync/0000000000000000000000000000000000000000000000000000000000000000',
      'not-even-a-token',
    ]) {
      const error = await rejection(client().syncCollection(calendar, token));
      expect(error).toBeInstanceOf(SyncTokenInvalid);
      expect(error.kind).toBe('sync_token_invalid');
      expect([403, 409]).toContain(error.status);
    }
  });

  it('fetches many events at once with calendar-multiget, and filters by time range with calendar-query', async () => {
    const calendar = `${home()}many/`;
    await client().makeCalendar(calendar, { name: 'Many' });
    const count = 130;
    const urls: string[] = [];
    for (let i = 0; i < count; i++) {
      const url = `${calendar}item-${i}-${i % 7}.ics`;
      urls.push(url);
      const day = String(1 + (i % 28)).padStart(2, '0');
      await client().putObject(
        url,
        event(`many-${i}`, `Event ${i}`, `202603${day}T090000Z`, `202603${day}T100000Z`),
        'text/calendar',
        { create: true },
      );
    }
    const listed = await client().listObjects(calendar);
    expect(listed).toHaveLength(count);

    // More than one batch, plus an href the server does not have (left out).
    const objects = await client().multiget(
      calendar,
      [...listed.map((one) => one.url), `${calendar}missing.ics`],
      'calendar',
    );
    expect(objects).toHaveLength(count);
    const byUrl = new Map(objects.map((one) => [one.url, one]));
    for (const [i, url] of urls.entries()) {
      expect(byUrl.get(url)?.data).toContain(`UID:many-${i}\r\n`);
      expect(byUrl.get(url)?.etag).toBe(listed.find((one) => one.url === url)?.etag);
    }

    // 1–2 March: days 01 and 02 (i % 28 ∈ {0, 1}).
    const inRange = await client().calendarQuery(calendar, {
      start: new Date('2026-03-01T00:00:00Z'),
      end: new Date('2026-03-03T00:00:00Z'),
    });
    const expected = urls.filter((_, i) => i % 28 < 2);
    expect(inRange.map((one) => one.url).sort()).toEqual(expected.sort());
    expect(inRange.every((one) => one.data.includes('BEGIN:VEVENT'))).toBe(true);
  });
});

describe('address books', () => {
  const home = () => `${radicale.url}ann/`;

  it('creates an address book with extended MKCOL and stores contacts and groups', async () => {
    const book = `${home()}contacts/`;
    await client().makeAddressBook(book, { name: 'Contacts', description: 'People' });
    const books = (await client().listCollections(home())).filter((one) => one.kind === 'addressbook');
    expect(books).toEqual([
      expect.objectContaining({ url: book, displayName: 'Contacts', description: 'People', components: undefined }),
    ]);
    expect((await client().discover(book, 'carddav')).homes).toEqual([book]);

    const ann = writeContactVCard('contact-ann', {
      given_name: 'Ann',
      surname: 'Lee',
      emails: [{ email: 'ann@example.org', type: 'work' }],
      notes: 'Long note '.repeat(20),
    });
    const bob = writeContactVCard(
      '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f',
      { given_name: 'Bob', phone_numbers: [{ number: '+1 555 0100', type: 'mobile' }] },
      { version: '4.0' },
    );
    const apple = writeGroupVCard('group-apple', 'Friends', ['contact-ann', '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f']);
    const four = writeGroupVCard('group-four', 'Work', ['contact-ann'], { version: '4.0' });
    const put = async (name: string, text: string) => {
      const etag = await client().putObject(`${book}${name}`, text, 'text/vcard; charset=utf-8', { create: true });
      expect(etag).toBeTruthy();
      return etag;
    };
    const annEtag = await put('ann.vcf', ann);
    await put('bob.vcf', bob);
    await put('friends.vcf', apple);
    await put('work.vcf', four);

    const listed = await client().listObjects(book);
    expect(listed).toHaveLength(4);
    const cards = await client().multiget(
      book,
      listed.map((one) => one.url),
      'addressbook',
    );
    const parsed = new Map(cards.map((card) => [card.url.slice(book.length), parseVCard(card.data)]));
    expect(parsed.get('ann.vcf')).toMatchObject({
      kind: 'individual',
      uid: 'contact-ann',
      fields: { given_name: 'Ann', surname: 'Lee', emails: [{ email: 'ann@example.org', type: 'work' }] },
    });
    expect(parsed.get('bob.vcf')).toMatchObject({
      kind: 'individual',
      uid: '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f',
      fields: { phone_numbers: [{ number: '+1 555 0100', type: 'mobile' }] },
    });
    expect(parsed.get('friends.vcf')).toEqual({
      kind: 'group',
      uid: 'group-apple',
      name: 'Friends',
      members: ['contact-ann', '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f'],
    });
    expect(parsed.get('work.vcf')).toEqual({
      kind: 'group',
      uid: 'group-four',
      name: 'Work',
      members: ['contact-ann'],
    });

    // A stale ETag on a contact: refused, as for events.
    const newer = await client().putObject(
      `${book}ann.vcf`,
      writeContactVCard('contact-ann', { given_name: 'Ann', surname: 'Lee-Smith' }),
      'text/vcard',
      { etag: annEtag! },
    );
    expect((await rejection(client().putObject(`${book}ann.vcf`, ann, 'text/vcard', { etag: annEtag! }))).kind).toBe(
      'precondition_failed',
    );
    expect(parseVCard((await client().getObject(`${book}ann.vcf`)).data)).toMatchObject({
      fields: { surname: 'Lee-Smith' },
    });
    expect((await client().getObject(`${book}ann.vcf`)).etag).toBe(newer);

    // Sync works on address books too.
    const sync = await client().syncCollection(book);
    expect(sync.changed).toHaveLength(4);
    await client().updateCollection(book, 'addressbook', { name: 'Renamed book' });
    expect((await client().listCollections(home())).find((one) => one.url === book)?.displayName).toBe('Renamed book');
  });
});
