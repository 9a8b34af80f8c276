import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoveryChecker } from '../../scripts/local-stack/google/discovery';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';

/**
 * The local Gmail fake over HTTP, and the Discovery checker that keeps it and its clients honest:
 * each rule of the checker is shown failing once, then the fake's mailbox behaviour (labels,
 * messages, search, threads, history, faults, auth) is driven with Node's fetch, and at the end no
 * request meant to be valid broke gmail-v1.json and no answer of the fake did either.
 */

const USER = 'ada@example.test';
const TOKEN = 'ya29.fake-token-ada';
let fake: GoogleFake;

interface Reply {
  status: number;
  headers: Headers;
  /** The JSON answer, read field by field as a client would (as test/support/api.ts does). */
  body: any;
}

/** A Gmail call as a client makes it: path under /gmail/v1/users/me, bearer token, JSON body. */
async function gmail(
  path: string,
  init: { method?: string; body?: unknown; token?: string | null } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (init.token !== null) headers.Authorization = `Bearer ${init.token ?? TOKEN}`;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${fake.url}/gmail/v1/users/me${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const b64url = (text: string | Buffer) => Buffer.from(text).toString('base64url');
const fromB64 = (text: string) => Buffer.from(text, 'base64url');
const crlf = (lines: string[]) => lines.join('\r\n');

const PDF = Buffer.from('%PDF-1.4 fake invoice bytes \u0000\u0001\u0002', 'latin1');

const RAW = {
  report: crlf([
    'From: Alice Liddell <alice@example.com>',
    `To: ${USER}`,
    'Subject: Quarterly report',
    'Message-ID: <report-1@example.com>',
    'Date: Sat, 10 Jan 2026 09:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    'Hello team, the quarterly numbers look good. Caf=C3=A9 at noon=3F Let=E2=80=99s =',
    'meet.',
    '',
  ]),
  invoice: crlf([
    'From: Bob <bob@example.org>',
    `To: ${USER}`,
    'Subject: =?UTF-8?B?SW52b2ljZSDigqwgNDI=?=',
    'Message-ID: <invoice-42@example.org>',
    'Date: Sun, 01 Feb 2026 12:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed;',
    ' boundary="outer-boundary"',
    '',
    'This is a multi-part message.',
    '--outer-boundary',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'Please find the invoice attached.',
    '--outer-boundary',
    'Content-Type: application/pdf; name="invoice-42.pdf"',
    'Content-Disposition: attachment; filename="invoice-42.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    PDF.toString('base64'),
    '--outer-boundary--',
    '',
  ]),
  reply: crlf([
    'From: Carol <carol@example.com>',
    `To: ${USER}, alice@example.com`,
    'Subject: Re: Quarterly report',
    'Message-ID: <report-2@example.com>',
    'In-Reply-To: <report-1@example.com>',
    'References: <report-1@example.com>',
    'Date: Sun, 11 Jan 2026 10:00:00 +0000',
    'Content-Type: text/plain',
    '',
    'Agreed, numbers look good.',
    '',
  ]),
};

/** IDs of the three inserted messages, by name. */
const ids: Record<keyof typeof RAW, { id: string; threadId: string }> = {} as never;

beforeAll(async () => {
  fake = await startGoogleFake();
  fake.addUser({ email: USER, accessToken: TOKEN });
});

afterAll(async () => {
  await fake?.close();
});

describe('Discovery checker', () => {
  const gmailChecker = discoveryChecker('gmail-v1');
  const calendar = discoveryChecker('calendar-v3');
  const people = discoveryChecker('people-v1');

  it('matches REST paths, reserved expansion included, across the three documents', () => {
    expect(gmailChecker.matchMethod('GET', '/gmail/v1/users/me/messages/abc/attachments/x')).toMatchObject({
      id: 'gmail.users.messages.attachments.get',
      pathParams: { userId: 'me', messageId: 'abc', id: 'x' },
    });
    expect(calendar.matchMethod('GET', '/calendar/v3/calendars/a%40b.test/events')).toMatchObject({
      id: 'calendar.events.list',
      pathParams: { calendarId: 'a@b.test' },
    });
    expect(people.matchMethod('GET', '/v1/people/me/connections')).toMatchObject({
      id: 'people.people.connections.list',
      pathParams: { resourceName: 'people/me' },
    });
    expect(people.matchMethod('GET', '/v1/contactGroups/family')?.id).toBe('people.contactGroups.get');
    expect(people.matchMethod('GET', '/v1/people:batchGet')?.id).toBe('people.people.getBatchGet');
    expect(gmailChecker.matchMethod('GET', '/gmail/v1/users/me/nothing')).toBeUndefined();
  });

  it('refuses what the document does not allow in a request, and accepts what it does', () => {
    const check = (pathname: string, query: string, httpMethod = 'GET', body?: unknown) =>
      gmailChecker.checkRequest({ httpMethod, pathname, query: new URLSearchParams(query), body });
    const list = '/gmail/v1/users/me/messages';
    expect(check(list, 'maxResults=10&labelIds=INBOX&labelIds=UNREAD&q=from:bob&prettyPrint=false')).toEqual([]);
    expect(check(list, 'colour=red')).toEqual(["gmail.users.messages.list: unknown query parameter 'colour'"]);
    expect(check(list, 'q=a&q=b')).toEqual([
      "gmail.users.messages.list: query parameter 'q' is not repeated but was given 2 times",
    ]);
    expect(check(list, 'maxResults=ten')).toEqual([
      `gmail.users.messages.list: query parameter 'maxResults'="ten" is not an integer`,
    ]);
    expect(check(list, 'includeSpamTrash=yes')[0]).toMatch(/not a boolean/);
    expect(check('/gmail/v1/users/me/messages/1', 'format=huge')[0]).toMatch(/'format'="huge" is not one of/);
    expect(check('/gmail/v1/users/me/history', 'startHistoryId=12x')[0]).toMatch(/is not a uint64/);
    expect(check(list, 'fields=messages(id,colour)')[0]).toMatch(/names 'messages\/colour'/);
    expect(check('/gmail/v1/users/me/nothing', '')[0]).toMatch(/no gmail:v1 method answers GET/);
    const labels = '/gmail/v1/users/me/labels';
    const label = { name: 'X', messageListVisibility: 'show', labelListVisibility: 'labelShow' };
    expect(check(labels, '', 'POST', label)).toEqual([]);
    expect(check(labels, '', 'POST', { ...label, colour: 'red' })).toEqual([
      "request of gmail.users.labels.create (Label): / has property 'colour', which the schema does not declare",
    ]);
    expect(check(labels, '', 'POST', { name: 'X' })).toEqual([
      'gmail.users.labels.create: body field /messageListVisibility is required',
      'gmail.users.labels.create: body field /labelListVisibility is required',
    ]);
    expect(check('/gmail/v1/users/me/messages/1/trash', '', 'POST', {})).toEqual([
      'gmail.users.messages.trash takes no request body',
    ]);
    expect(
      calendar.checkRequest({
        httpMethod: 'GET',
        pathname: '/calendar/v3/calendars/primary/events',
        query: new URLSearchParams('maxResults=0&timeMin=2026-01-01'),
      }),
    ).toEqual([
      `calendar.events.list: query parameter 'maxResults'="0" is below the minimum 1`,
      `calendar.events.list: query parameter 'timeMin'="2026-01-01" is not an RFC 3339 date-time`,
    ]);
  });

  it('refuses answers with fields the schema lacks or values of the wrong type, and accepts good ones', () => {
    const message = { id: '18c0ffee00000001', threadId: '18c0ffee00000001', historyId: '1001', sizeEstimate: 12 };
    expect(gmailChecker.checkResponse('gmail.users.messages.get', message)).toEqual([]);
    expect(gmailChecker.checkResponse('gmail.users.messages.get', { ...message, folder: 'INBOX' })).toEqual([
      "response of gmail.users.messages.get (Message): / has property 'folder', which the schema does not declare",
    ]);
    expect(gmailChecker.checkResponse('gmail.users.messages.get', { ...message, historyId: 1001 })).toEqual([
      'response of gmail.users.messages.get (Message): /historyId must be string',
    ]);
    expect(
      gmailChecker.checkResponse('gmail.users.messages.get', { ...message, payload: { body: { data: 'a b' } } }),
    ).toEqual([expect.stringMatching(/\/payload\/body\/data must match pattern/)]);
    expect(gmailChecker.checkResponse('gmail.users.messages.delete', undefined)).toEqual([]);
    expect(gmailChecker.checkResponse('gmail.users.messages.delete', {})).toEqual([
      'gmail.users.messages.delete answers with an empty body, not object',
    ]);

    const events = {
      kind: 'calendar#events',
      items: [{ id: 'e1', start: { dateTime: '2026-01-10T09:00:00Z' }, extendedProperties: { private: { a: 'b' } } }],
    };
    expect(calendar.checkResponse('calendar.events.list', events)).toEqual([]);
    expect(calendar.checkResponse('calendar.events.list', { ...events, nextSyncToken: 7 })).toEqual([
      'response of calendar.events.list (Events): /nextSyncToken must be string',
    ]);
    expect(
      calendar.checkResponse('calendar.events.list', { items: [{ id: 'e1', start: { dateTime: 'soon' } }] }),
    ).toEqual(['response of calendar.events.list (Events): /items/0/start/dateTime must match format "date-time"']);

    const connections = {
      connections: [{ resourceName: 'people/c1', names: [{ displayName: 'Ada' }] }],
      totalItems: 1,
    };
    expect(people.checkResponse('people.people.connections.list', connections)).toEqual([]);
    expect(people.checkResponse('people.people.connections.list', { ...connections, totalItems: '1' })).toEqual([
      'response of people.people.connections.list (ListConnectionsResponse): /totalItems must be integer',
    ]);
    expect(
      people.checkResponse('people.people.connections.list', {
        connections: [{ resourceName: 'people/c1', names: [{ displayName: 'Ada', nickname: 'A' }] }],
      }),
    ).toEqual([
      "response of people.people.connections.list (ListConnectionsResponse): /connections/0/names/0 has property 'nickname', which the schema does not declare",
    ]);
  });

  it('takes null in a PATCH body to clear a field, and refuses it in other bodies', () => {
    const check = (httpMethod: string, pathname: string, body: unknown) =>
      calendar.checkRequest({ httpMethod, pathname, query: new URLSearchParams(), body });
    const event = '/calendar/v3/calendars/primary/events/abc123';
    const start = { dateTime: '2026-02-03T10:00:00+01:00' };
    const end = { dateTime: '2026-02-03T11:00:00+01:00' };
    const cleared = {
      location: null,
      start: { dateTime: '2026-02-03T10:00:00+01:00', timeZone: null },
      reminders: { overrides: null },
      extendedProperties: { private: { app: null } },
    };
    expect(check('PATCH', event, cleared)).toEqual([]);
    expect(check('PATCH', '/calendar/v3/calendars/primary', { description: null })).toEqual([]);
    expect(check('POST', '/calendar/v3/calendars/primary/events', { start, end, location: null })).toEqual([
      'request of calendar.events.insert (Event): /location must be string',
    ]);
    expect(check('PUT', event, { start, end, location: null })).toEqual([
      'request of calendar.events.update (Event): /location must be string',
    ]);
    // Only fields the schema has may be cleared; an array item or the body itself is not a field.
    expect(check('PATCH', event, { colour: null })).toEqual([
      "request of calendar.events.patch (Event): / has property 'colour', which the schema does not declare",
    ]);
    expect(check('PATCH', event, { attendees: [null] })).toEqual([
      'request of calendar.events.patch (Event): /attendees/0 must be object',
    ]);
    expect(check('PATCH', event, null)).toEqual(['request of calendar.events.patch (Event): / must be object']);
    expect(
      gmailChecker.checkRequest({
        httpMethod: 'PATCH',
        pathname: '/gmail/v1/users/me/labels/Label_1',
        query: new URLSearchParams(),
        body: { color: null },
      }),
    ).toEqual([]);
  });

  it('takes an EventDateTime without offset when it gives timeZone, and only then', () => {
    const insert = (start: unknown, end: unknown = start) =>
      calendar.checkRequest({
        httpMethod: 'POST',
        pathname: '/calendar/v3/calendars/primary/events',
        query: new URLSearchParams(),
        body: { start, end },
      });
    expect(insert({ dateTime: '2026-03-10T09:00:00', timeZone: 'America/New_York' })).toEqual([]);
    expect(insert({ dateTime: '2026-03-10T09:00:00.250', timeZone: 'America/New_York' })).toEqual([]);
    expect(insert({ dateTime: '2026-03-10T09:00:00-04:00', timeZone: 'America/New_York' })).toEqual([]);
    expect(insert({ dateTime: '2026-03-10T09:00:00Z' })).toEqual([]);
    expect(insert({ dateTime: '2026-03-10T09:00:00' }, { dateTime: '2026-03-10T10:00:00+01:00' })).toEqual([
      'request of calendar.events.insert (Event): /start/dateTime must match format "date-time"',
    ]);
    expect(insert({ dateTime: '2026-02-30T09:00:00', timeZone: 'Europe/Berlin' })).toEqual([
      'request of calendar.events.insert (Event): /end/dateTime must match format "date-time-offset-optional"',
      'request of calendar.events.insert (Event): /start/dateTime must match format "date-time-offset-optional"',
    ]);
    const end = { dateTime: '2026-03-10T10:00:00', timeZone: 'Europe/Berlin' };
    expect(insert({ dateTime: '2026-03-10 09:00:00', timeZone: 'Europe/Berlin' }, end)).toEqual([
      'request of calendar.events.insert (Event): /start/dateTime must match format "date-time-offset-optional"',
    ]);
    // Other date-times keep their offset: freebusy's window, whatever timeZone the request gives.
    expect(
      calendar.checkRequest({
        httpMethod: 'POST',
        pathname: '/calendar/v3/freeBusy',
        query: new URLSearchParams(),
        body: { timeMin: '2026-03-10T00:00:00', timeMax: '2026-03-11T00:00:00Z', timeZone: 'Europe/Berlin' },
      }),
    ).toEqual(['request of calendar.freebusy.query (FreeBusyRequest): /timeMin must match format "date-time"']);
  });

  it('records a violating request and answers it 400 in Google’s error shape', async () => {
    const res = await gmail('/messages?colour=red&q=a&q=b');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', errors: [{ domain: 'global' }] });
    expect(fake.requestViolations).toEqual([
      "gmail.users.messages.list: unknown query parameter 'colour'",
      "gmail.users.messages.list: query parameter 'q' is not repeated but was given 2 times",
    ]);
    const label = await gmail('/labels', {
      body: { name: 'X', messageListVisibility: 'show', labelListVisibility: 'labelShow', colour: 'red' },
    });
    expect(label.status).toBe(400);
    expect(fake.requestViolations).toHaveLength(3);
    fake.clearViolations();
  });
});

describe('Labels', () => {
  it('lists the system labels', async () => {
    const res = await gmail('/labels');
    expect(res.status).toBe(200);
    const system = res.body.labels
      .filter((l: { type: string }) => l.type === 'system')
      .map((l: { id: string }) => l.id);
    expect(system).toEqual(
      expect.arrayContaining(['INBOX', 'SENT', 'DRAFT', 'TRASH', 'SPAM', 'STARRED', 'UNREAD', 'IMPORTANT', 'CHAT']),
    );
    expect(system).toEqual(expect.arrayContaining(['CATEGORY_PERSONAL', 'CATEGORY_SOCIAL', 'CATEGORY_FORUMS']));
  });

  it('creates, patches, updates and deletes a user label, nested names included', async () => {
    // Prepare
    const visibility = { messageListVisibility: 'show', labelListVisibility: 'labelShow' };
    // Act
    const parent = await gmail('/labels', { body: { name: 'Projects', ...visibility } });
    const child = await gmail('/labels', { body: { name: 'Projects/Alpha', ...visibility } });
    const duplicate = await gmail('/labels', { body: { name: 'projects', ...visibility } });
    const reserved = await gmail('/labels', { body: { name: 'Inbox', ...visibility } });
    // Assess
    expect(parent.status).toBe(200);
    expect(parent.body).toMatchObject({ id: expect.stringMatching(/^Label_\d+$/), name: 'Projects', type: 'user' });
    expect(child.body.name).toBe('Projects/Alpha');
    expect(duplicate.status).toBe(409);
    expect(reserved.status).toBe(400);

    const patched = await gmail(`/labels/${child.body.id}`, {
      method: 'PATCH',
      body: { name: 'Projects/Beta', color: { textColor: '#000000', backgroundColor: '#16a765' } },
    });
    expect(patched.body).toMatchObject({ name: 'Projects/Beta', color: { backgroundColor: '#16a765' } });
    const updated = await gmail(`/labels/${parent.body.id}`, {
      method: 'PUT',
      body: { id: parent.body.id, name: 'Work', messageListVisibility: 'hide', labelListVisibility: 'labelHide' },
    });
    expect(updated.body).toEqual({
      id: parent.body.id,
      name: 'Work',
      type: 'user',
      messageListVisibility: 'hide',
      labelListVisibility: 'labelHide',
    });
    const got = await gmail(`/labels/${child.body.id}`);
    expect(got.body).toMatchObject({ name: 'Projects/Beta', messagesTotal: 0, threadsUnread: 0 });
    expect((await gmail('/labels/INBOX', { method: 'PATCH', body: { name: 'Other' } })).status).toBe(400);
    // A patch's null clears the field.
    const uncoloured = await gmail(`/labels/${child.body.id}`, { method: 'PATCH', body: { color: null } });
    expect(uncoloured.status).toBe(200);
    expect(uncoloured.body.color).toBeUndefined();

    expect((await gmail(`/labels/${child.body.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await gmail(`/labels/${child.body.id}`)).status).toBe(404);
    const names = (await gmail('/labels')).body.labels.map((l: { name: string }) => l.name);
    expect(names).toContain('Work');
    expect(names).not.toContain('Projects/Beta');
  });
});

describe('Messages', () => {
  beforeAll(async () => {
    for (const name of ['report', 'invoice', 'reply'] as const) {
      const res = await gmail('/messages?internalDateSource=dateHeader', {
        body: { raw: b64url(RAW[name]), labelIds: ['INBOX', 'UNREAD'] },
      });
      if (res.status !== 200) throw new Error(`insert ${name}: ${res.status} ${JSON.stringify(res.body)}`);
      ids[name] = res.body;
    }
  });

  it('gives Gmail-like IDs and threads a reply with the message it answers', () => {
    for (const { id } of Object.values(ids)) expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(ids.reply.threadId).toBe(ids.report.threadId);
    expect(ids.report.threadId).toBe(ids.report.id);
    expect(ids.invoice.threadId).not.toBe(ids.report.threadId);
  });

  it('lists newest first, filters by labelIds (all of them) and pages', async () => {
    const all = await gmail('/messages?labelIds=INBOX');
    expect(all.body.messages.map((m: { id: string }) => m.id)).toEqual([ids.invoice.id, ids.reply.id, ids.report.id]);
    expect(all.body.resultSizeEstimate).toBe(3);
    expect((await gmail('/messages?labelIds=INBOX&labelIds=SENT')).body).toEqual({ resultSizeEstimate: 0 });

    const first = await gmail('/messages?maxResults=2');
    expect(first.body.messages).toHaveLength(2);
    const second = await gmail(`/messages?maxResults=2&pageToken=${first.body.nextPageToken}`);
    expect(second.body.messages.map((m: { id: string }) => m.id)).toEqual([ids.report.id]);
    expect(second.body.nextPageToken).toBeUndefined();
    expect((await gmail('/messages?pageToken=garbage')).status).toBe(400);
  });

  it('searches with q: words, phrases, operators, dates and negation', async () => {
    const search = async (q: string) =>
      ((await gmail(`/messages?q=${encodeURIComponent(q)}`)).body.messages ?? []).map((m: { id: string }) => m.id);
    expect(await search('quarterly')).toEqual([ids.reply.id, ids.report.id]);
    expect(await search('CAFÉ')).toEqual([ids.report.id]);
    expect(await search('"numbers look good"')).toEqual([ids.reply.id, ids.report.id]);
    expect(await search('from:bob@example.org')).toEqual([ids.invoice.id]);
    expect(await search('from:alice')).toEqual([ids.report.id]);
    expect(await search('to:alice@example.com')).toEqual([ids.reply.id]);
    expect(await search('subject:invoice')).toEqual([ids.invoice.id]);
    expect(await search('has:attachment')).toEqual([ids.invoice.id]);
    expect(await search('in:inbox is:unread -has:attachment')).toEqual([ids.reply.id, ids.report.id]);
    expect(await search('after:2026/01/11 before:2026/01/31')).toEqual([ids.reply.id]);
    expect(await search(`after:${Date.UTC(2026, 0, 20) / 1000}`)).toEqual([ids.invoice.id]);
    expect(await search('quarterly -from:carol')).toEqual([ids.report.id]);
    expect(await search('label:work')).toEqual([]);
    expect(await search('subject:invoice OR from:alice')).toEqual([ids.invoice.id, ids.report.id]);
    expect(await search('{subject:invoice from:alice}')).toEqual([ids.invoice.id, ids.report.id]);
    expect(await search('quarterly -(from:carol OR has:attachment)')).toEqual([ids.report.id]);
    expect(await search('(quarterly) | invoice')).toEqual([ids.invoice.id, ids.reply.id, ids.report.id]);
    for (const q of ['quarterly AND invoice', 'filename:pdf', 'is:muted', '(a b', 'a }', 'OR a', 'after:yesterday']) {
      const res = await gmail(`/messages?q=${encodeURIComponent(q)}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error.errors[0].reason).toBe('invalidArgument');
    }
  });

  it('gets a message in each format', async () => {
    const minimal = (await gmail(`/messages/${ids.report.id}?format=minimal`)).body;
    expect(minimal).toMatchObject({ id: ids.report.id, labelIds: ['INBOX', 'UNREAD'], historyId: expect.any(String) });
    expect(minimal.internalDate).toBe(String(Date.UTC(2026, 0, 10, 9)));
    expect(minimal.snippet).toBe('Hello team, the quarterly numbers look good. Café at noon? Let’s meet.');
    expect(minimal.payload).toBeUndefined();

    const raw = (await gmail(`/messages/${ids.invoice.id}?format=raw`)).body;
    expect(fromB64(raw.raw).toString('latin1')).toBe(RAW.invoice);
    expect(raw.sizeEstimate).toBe(Buffer.byteLength(RAW.invoice));

    const metadata = (
      await gmail(`/messages/${ids.invoice.id}?format=metadata&metadataHeaders=subject&metadataHeaders=From`)
    ).body;
    expect(metadata.payload.headers).toEqual([
      { name: 'From', value: 'Bob <bob@example.org>' },
      { name: 'Subject', value: 'Invoice € 42' },
    ]);

    const full = (await gmail(`/messages/${ids.invoice.id}`)).body;
    expect(full.payload).toMatchObject({ partId: '', mimeType: 'multipart/mixed', filename: '', body: { size: 0 } });
    const [text, pdf] = full.payload.parts;
    expect(text).toMatchObject({ partId: '0', mimeType: 'text/plain', filename: '' });
    expect(fromB64(text.body.data).toString()).toBe('Please find the invoice attached.');
    expect(pdf).toMatchObject({ partId: '1', mimeType: 'application/pdf', filename: 'invoice-42.pdf' });
    expect(pdf.body).toEqual({ attachmentId: expect.any(String), size: PDF.length });
    expect(pdf.headers).toContainEqual({ name: 'Content-Disposition', value: 'attachment; filename="invoice-42.pdf"' });

    const attachment = await gmail(`/messages/${ids.invoice.id}/attachments/${pdf.body.attachmentId}`);
    expect(attachment.status).toBe(200);
    expect(fromB64(attachment.body.data)).toEqual(PDF);
    expect(attachment.body.size).toBe(PDF.length);

    const decoded = (await gmail(`/messages/${ids.report.id}?format=full`)).body.payload;
    expect(fromB64(decoded.body.data).toString('utf8')).toContain('Café at noon? Let’s meet.');
    expect((await gmail('/messages/0123456789abcdef')).status).toBe(404);
    expect((await gmail('/messages/not-an-id')).status).toBe(400);
    const partial = await gmail(`/messages/${ids.report.id}?fields=id,labelIds`);
    expect(partial.body).toEqual({ id: ids.report.id, labelIds: ['INBOX', 'UNREAD'] });
  });

  it('modifies, trashes, untrashes and deletes', async () => {
    const starred = await gmail(`/messages/${ids.report.id}/modify`, {
      body: { addLabelIds: ['STARRED'], removeLabelIds: ['UNREAD'] },
    });
    expect(starred.body).toEqual({ id: ids.report.id, threadId: ids.report.threadId, labelIds: ['INBOX', 'STARRED'] });
    expect((await gmail(`/messages/${ids.report.id}/modify`, { body: { addLabelIds: ['Work'] } })).status).toBe(400);

    const trashed = await gmail(`/messages/${ids.invoice.id}/trash`, { method: 'POST' });
    expect(trashed.body.labelIds).toContain('TRASH');
    expect((await gmail('/messages?labelIds=INBOX')).body.resultSizeEstimate).toBe(2);
    expect((await gmail('/messages?labelIds=INBOX&includeSpamTrash=true')).body.resultSizeEstimate).toBe(3);
    expect((await gmail('/messages?q=in:trash')).body.messages).toEqual([
      { id: ids.invoice.id, threadId: ids.invoice.threadId },
    ]);
    const untrashed = await gmail(`/messages/${ids.invoice.id}/untrash`, { method: 'POST' });
    expect(untrashed.body.labelIds).toEqual(['INBOX', 'UNREAD']);

    await gmail('/messages/batchModify', { body: { ids: [ids.report.id, ids.reply.id], addLabelIds: ['IMPORTANT'] } });
    expect((await gmail('/messages?q=is:important')).body.resultSizeEstimate).toBe(2);
    const label = await gmail('/labels/IMPORTANT');
    expect(label.body).toMatchObject({ messagesTotal: 2, threadsTotal: 1, messagesUnread: 1, threadsUnread: 1 });

    const extra = fake.deliver(USER, crlf(['From: x@example.net', 'Subject: Spam?', '', 'Buy now']));
    expect((await gmail(`/messages/${extra.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await gmail(`/messages/${extra.id}`)).status).toBe(404);
  });

  it('groups threads and changes them as one', async () => {
    const threads = await gmail('/threads?labelIds=INBOX');
    expect(threads.body.threads.map((t: { id: string }) => t.id)).toEqual([ids.invoice.threadId, ids.report.threadId]);
    const thread = (await gmail(`/threads/${ids.report.threadId}?format=minimal`)).body;
    expect(thread.messages.map((m: { id: string }) => m.id)).toEqual([ids.report.id, ids.reply.id]);

    const modified = await gmail(`/threads/${ids.report.threadId}/modify`, { body: { addLabelIds: ['STARRED'] } });
    expect(modified.body.messages.every((m: { labelIds: string[] }) => m.labelIds.includes('STARRED'))).toBe(true);
    await gmail(`/threads/${ids.report.threadId}/trash`, { method: 'POST' });
    expect((await gmail('/threads?labelIds=INBOX')).body.threads).toEqual([
      expect.objectContaining({ id: ids.invoice.threadId }),
    ]);
    await gmail(`/threads/${ids.report.threadId}/untrash`, { method: 'POST' });
    expect((await gmail('/threads?q=quarterly')).body.threads).toHaveLength(1);
  });

  it('sends: adds SENT and threads the answer with its conversation', async () => {
    const raw = crlf([
      'To: bob@example.org',
      'Subject: RE: Invoice € 42',
      'In-Reply-To: <invoice-42@example.org>',
      'References: <invoice-42@example.org>',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Paid, thanks.',
    ]);
    const sent = await gmail('/messages/send', { body: { raw: b64url(raw) } });
    expect(sent.body).toMatchObject({ threadId: ids.invoice.threadId, labelIds: ['SENT'] });
    const headers = (await gmail(`/messages/${sent.body.id}?format=metadata`)).body.payload.headers;
    expect(headers).toContainEqual({ name: 'From', value: USER });
    expect((await gmail('/messages/send', { body: { raw: b64url('Subject: nobody\r\n\r\nhi') } })).status).toBe(400);
  });
});

describe('History', () => {
  it('lists what changed after a historyId, by record type, and 404s once expired', async () => {
    // Prepare
    const start = fake.historyIdOf(USER);
    // Act
    const arrived = fake.deliver(USER, crlf(['From: dora@example.com', 'Subject: Hi', '', 'New mail']));
    await gmail(`/messages/${arrived.id}/modify`, { body: { removeLabelIds: ['UNREAD'], addLabelIds: ['STARRED'] } });
    await gmail(`/messages/${arrived.id}`, { method: 'DELETE' });
    const history = await gmail(`/history?startHistoryId=${start}`);
    // Assess
    expect(history.status).toBe(200);
    expect(history.body.historyId).toBe(fake.historyIdOf(USER));
    const records = history.body.history;
    expect(records).toHaveLength(3);
    expect(records[0]).toEqual({
      id: expect.any(String),
      messages: [{ id: arrived.id, threadId: arrived.threadId }],
      messagesAdded: [{ message: { id: arrived.id, threadId: arrived.threadId, labelIds: ['INBOX', 'UNREAD'] } }],
    });
    expect(records[1]).toMatchObject({
      labelsAdded: [{ message: { id: arrived.id, labelIds: ['INBOX', 'STARRED'] }, labelIds: ['STARRED'] }],
      labelsRemoved: [{ labelIds: ['UNREAD'] }],
    });
    expect(records[2].messagesDeleted).toEqual([{ message: { id: arrived.id, threadId: arrived.threadId } }]);
    expect(Number(records[0].id)).toBeGreaterThan(Number(start));

    const onlyAdded = await gmail(`/history?startHistoryId=${start}&historyTypes=labelAdded`);
    expect(onlyAdded.body.history).toEqual([expect.objectContaining({ labelsAdded: expect.any(Array) })]);
    expect(onlyAdded.body.history[0].labelsRemoved).toBeUndefined();
    const paged = await gmail(`/history?startHistoryId=${start}&maxResults=2`);
    expect(paged.body.history).toHaveLength(2);
    const rest = await gmail(`/history?startHistoryId=${start}&maxResults=2&pageToken=${paged.body.nextPageToken}`);
    expect(rest.body.history.map((r: { id: string }) => r.id)).toEqual([records[2].id]);
    expect((await gmail('/history')).status).toBe(400);

    fake.expireHistory(USER);
    const expired = await gmail(`/history?startHistoryId=${start}`);
    expect(expired.status).toBe(404);
    expect(expired.body.error).toMatchObject({ status: 'NOT_FOUND', errors: [{ reason: 'notFound' }] });
    const current = await gmail(`/history?startHistoryId=${fake.historyIdOf(USER)}`);
    expect(current.body).toEqual({ historyId: fake.historyIdOf(USER) });
  });

  it('watches and stops', async () => {
    const before = Date.now();
    const watch = await gmail('/watch', { body: { topicName: 'projects/p/topics/gmail', labelIds: ['INBOX'] } });
    expect(watch.body.historyId).toBe(fake.historyIdOf(USER));
    expect(Number(watch.body.expiration)).toBeGreaterThanOrEqual(before + 7 * 24 * 3600 * 1000);
    expect(fake.watchOf(USER)).toMatchObject({ topicName: 'projects/p/topics/gmail', labelFilterBehavior: 'include' });
    expect((await gmail('/watch', { body: { topicName: 'gmail' } })).status).toBe(400);
    expect((await gmail('/stop', { method: 'POST' })).status).toBe(204);
    expect(fake.watchOf(USER)).toBeUndefined();
  });
});

describe('Faults', () => {
  it('answers an injected 429 with Retry-After, then serves again', async () => {
    fake.inject({ method: 'gmail.users.messages.list', status: 429, retryAfter: 7, times: 2 });
    const other = await gmail('/labels');
    const first = await gmail('/messages');
    const second = await gmail('/messages');
    const third = await gmail('/messages');
    expect(other.status).toBe(200);
    expect([first.status, second.status, third.status]).toEqual([429, 429, 200]);
    expect(first.headers.get('retry-after')).toBe('7');
    expect(first.body.error).toMatchObject({
      code: 429,
      status: 'RESOURCE_EXHAUSTED',
      errors: [{ domain: 'global', reason: 'rateLimitExceeded' }],
    });
  });

  it('answers 403 userRateLimitExceeded to any method', async () => {
    fake.inject({ status: 403, reason: 'userRateLimitExceeded' });
    const refused = await gmail('/profile');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      status: 'PERMISSION_DENIED',
      errors: [{ reason: 'userRateLimitExceeded' }],
    });
    expect((await gmail('/profile')).body.emailAddress).toBe(USER);
  });

  it('answers late when told to, without an error', async () => {
    fake.inject({ method: 'gmail.users.getProfile', delayMs: 300 });
    const started = performance.now();
    const late = await gmail('/profile');
    expect(late.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });
});

describe('Auth', () => {
  it('answers 401 without a token or with an unknown one, 403 for another user', async () => {
    const none = await gmail('/labels', { token: null });
    const unknown = await gmail('/labels', { token: 'ya29.nobody' });
    expect(none.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toMatchObject({
      code: 401,
      status: 'UNAUTHENTICATED',
      errors: [{ reason: 'authError' }],
    });
    expect(unknown.headers.get('www-authenticate')).toMatch(/^Bearer /);
    const other = await fetch(`${fake.url}/gmail/v1/users/eve@example.test/profile`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    expect(other.status).toBe(403);
    const byAddress = await fetch(`${fake.url}/gmail/v1/users/${encodeURIComponent(USER)}/profile`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    expect(((await byAddress.json()) as { emailAddress: string }).emailAddress).toBe(USER);
  });
});

describe('The whole run', () => {
  it('sent no request that broke gmail-v1.json and got no answer that did', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});

describe('Tokens of the sign-in', () => {
  it('knows a token its userinfo endpoint answers an email for, and no other', async () => {
    const { createServer } = await import('node:http');
    const userinfo = createServer((req, res) => {
      const known = req.headers.authorization === 'Bearer signed-in-token';
      res.writeHead(known ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(known ? { sub: 's1', email: 'dana@example.org' } : { error: 'invalid_token' }));
    });
    await new Promise<void>((resolve) => userinfo.listen(0, '127.0.0.1', resolve));
    const port = (userinfo.address() as { port: number }).port;
    const signedIn = await startGoogleFake({ userinfoUrl: `http://127.0.0.1:${port}/me` });
    try {
      const profile = await fetch(`${signedIn.url}/gmail/v1/users/me/profile`, {
        headers: { authorization: 'Bearer signed-in-token' },
      });
      expect(profile.status).toBe(200);
      expect(((await profile.json()) as { emailAddress: string }).emailAddress).toBe('dana@example.org');
      const calendars = await fetch(`${signedIn.url}/calendar/v3/users/me/calendarList`, {
        headers: { authorization: 'Bearer signed-in-token' },
      });
      expect(calendars.status).toBe(200);
      const stranger = await fetch(`${signedIn.url}/gmail/v1/users/me/profile`, {
        headers: { authorization: 'Bearer someone-else' },
      });
      expect(stranger.status).toBe(401);
    } finally {
      await signedIn.close();
      await new Promise<void>((resolve) => userinfo.close(() => resolve()));
    }
  });
});
