import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { graphChecker } from '../../scripts/local-stack/microsoft/openapi';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';

/**
 * The local Microsoft Graph fake (mail) over HTTP, and the OpenAPI checker that keeps it and its
 * clients honest: the checker's readings of Graph's descriptions first, then every served endpoint
 * driven with Node's fetch, faults and `$batch` included. After each test no request meant to be valid
 * broke the descriptions and no answer of the fake did either.
 */

const ADA = 'ada@contoso.test';
const ADA_TOKEN = 'eyJ0eXAi.fake-token-ada';
const BOB = 'bob@contoso.test';
const BOB_TOKEN = 'eyJ0eXAi.fake-token-bob';
const T0 = Date.parse('2026-03-02T09:00:00Z');

let fake: GraphFake;
let clock = T0;

interface Reply {
  status: number;
  headers: Headers;
  /** The JSON answer, read field by field as a client would. */
  body: any;
  text: string;
}

/** A Graph call as a client makes it: a path under /v1.0 (or a nextLink), bearer token, JSON body. */
async function graph(
  path: string,
  init: { method?: string; body?: unknown; token?: string | null; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== null) headers.Authorization = `Bearer ${init.token ?? ADA_TOKEN}`;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const url = path.startsWith('http') ? path : `${fake.url}/v1.0${path}`;
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  const json = /json/.test(res.headers.get('content-type') ?? '') && text ? JSON.parse(text) : undefined;
  return { status: res.status, headers: res.headers, body: json, text };
}

/** A received message in Ada's mailbox, `minutes` after T0. */
function receive(subject: string, minutes: number, extra: Partial<Parameters<GraphFake['deliver']>[1]> = {}) {
  return fake.deliver(ADA, {
    from: { name: 'Carol', address: 'carol@fabrikam.test' },
    to: ADA,
    subject,
    text: `Body of ${subject}`,
    receivedAt: T0 + minutes * 60_000,
    ...extra,
  });
}

beforeAll(async () => {
  fake = await startGraphFake({ now: () => clock });
});

beforeEach(() => {
  fake.reset();
  clock = T0 + 3_600_000;
  fake.addUser({ email: ADA, accessToken: ADA_TOKEN, id: '6e7b768e-07e2-4810-8459-485f84f8f204', displayName: 'Ada' });
  fake.addUser({ email: BOB, accessToken: BOB_TOKEN, displayName: 'Bob' });
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

describe('OpenAPI checker', () => {
  const checker = graphChecker();

  it('matches Graph wire paths to described operations: /me, key syntax, actions and functions', () => {
    // Act
    const delta = checker.match('GET', "/me/mailfolders('AQMkADAw')/messages/delta");
    const move = checker.match('POST', '/users/ada@contoso.test/messages/AAMk=/move');
    // Assess
    expect(delta).toMatchObject({
      operation: { id: 'user.mailFolder.message_delta' },
      params: { 'user-id': 'me', 'mailFolder-id': 'AQMkADAw' },
    });
    expect(move).toMatchObject({
      operation: { id: 'user.message_move' },
      params: { 'user-id': 'ada@contoso.test', 'message-id': 'AAMk=' },
    });
    expect(checker.match('POST', '/me/sendMail')?.operation.id).toBe('user_sendMail');
    expect(checker.match('GET', '/me')?.operation.id).toBe('user_GetUser');
    expect(checker.match('GET', '/me/messages/delta')?.operation.id).toBe('user_GetMessage');
    expect(checker.match('GET', '/me/contacts/delta')?.operation.id).toBe('user.contact_delta');
    expect(checker.match('GET', '/me/people')).toBeUndefined();
  });

  it('refuses query options and bodies the description does not allow, and takes camelCase action parameters', () => {
    // Prepare
    const check = (httpMethod: string, pathname: string, query: string, body?: unknown) =>
      checker.checkRequest({ httpMethod, pathname, query: new URLSearchParams(query), body });
    // Act / Assess
    expect(check('GET', '/me/messages', '$select=subject,from&$top=5&$orderby=receivedDateTime desc')).toEqual([]);
    expect(check('GET', '/me/messages', '$select=subject,colour&$top=five&limit=1')).toEqual([
      "user_ListMessage: $select names 'colour', which microsoft.graph.message does not have",
      `user_ListMessage: query option '$top'="five" is not an integer`,
      "user_ListMessage: unknown query option 'limit'",
    ]);
    expect(check('GET', '/me/messages', '$expand=subject')).toEqual([
      "user_ListMessage: $expand names 'subject', which is not a navigation property of microsoft.graph.message",
    ]);
    expect(check('POST', '/me/messages/AAMk=/move', '', { destinationId: 'inbox' })).toEqual([]);
    expect(check('POST', '/me/messages/AAMk=/move', '', { destinationId: 7 })).toEqual([
      'request of user.message_move: /DestinationId must be string',
    ]);
    expect(check('PATCH', '/me/messages/AAMk=', '', { isRead: 'yes' })).toEqual([
      'request of user_UpdateMessage: /isRead must be boolean,null',
    ]);
    expect(check('PATCH', '/me/messages/AAMk=', '', { colour: 'red' })).toEqual([
      "request of user_UpdateMessage: / has property 'colour', which the description does not declare",
    ]);
    expect(check('POST', '/me/messages/AAMk=/send', '', {})).toEqual(['user.message_send takes no request body']);
    expect(check('POST', '/me/sendMail', '')).toEqual(['user_sendMail: a request body is required (an object)']);
    expect(check('GET', '/me/mailFolders/inbox/messages/delta', '$deltatoken=abc')).toEqual([]);
    expect(check('GET', '/me/messages', '$deltatoken=abc')).toEqual([
      "user_ListMessage: unknown query option '$deltatoken'",
    ]);
  });

  it('allows OData annotations, checks derived types by @odata.type, and refuses undeclared properties', () => {
    // Prepare
    const message = { '@odata.etag': 'W/"x"', '@odata.context': 'c', id: 'AAMk=', subject: 'Hi', isRead: true };
    const file = { '@odata.type': '#microsoft.graph.fileAttachment', id: 'a', name: 'a.txt', contentBytes: 'aGk=' };
    // Act / Assess
    expect(checker.checkResponse('user_GetMessage', 200, message)).toEqual([]);
    expect(checker.checkResponse('user_GetMessage', 200, { ...message, folder: 'inbox' })).toEqual([
      "response of user_GetMessage: / has property 'folder', which the description does not declare",
    ]);
    expect(checker.checkResponse('user.message_GetAttachment', 200, file)).toEqual([]);
    expect(checker.checkResponse('user.message_GetAttachment', 200, { ...file, '@odata.type': undefined })).toEqual([
      "response of user.message_GetAttachment: / has property 'contentBytes', which the description does not declare",
    ]);
    expect(
      checker.checkResponse('user.mailFolder.message_delta', 200, {
        value: [
          { id: 'gone', '@removed': { reason: 'deleted' } },
          { id: 'kept', isRead: false },
        ],
        '@odata.deltaLink': 'x',
      }),
    ).toEqual([]);
    expect(
      checker.checkResponse('user.mailFolder.message_delta', 200, {
        value: [{ id: 'gone', subject: 'x', '@removed': { reason: 'moved' } }],
      }),
    ).toEqual([
      "response of user.mailFolder.message_delta: /value/0/@removed/reason must be 'deleted' or 'changed'",
      'response of user.mailFolder.message_delta: /value/0 is removed but carries subject',
    ]);
    expect(checker.checkResponse('user.message_send', 202, undefined)).toEqual([]);
    expect(checker.checkResponse('user.message_send', 400, { error: { code: 'x' } })).toEqual([
      "error answer (ODataError): /error must have required property 'message'",
    ]);
  });
});

describe('Users and authentication', () => {
  it('answers the signed-in user at /me and at /users/{userPrincipalName}', async () => {
    // Act
    const me = await graph('/me');
    const byName = await graph(`/users/${ADA}?$select=displayName,mail`);
    // Assess
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      id: '6e7b768e-07e2-4810-8459-485f84f8f204',
      mail: ADA,
      userPrincipalName: ADA,
      displayName: 'Ada',
    });
    expect(byName.body).toEqual({
      '@odata.context': expect.any(String),
      id: '6e7b768e-07e2-4810-8459-485f84f8f204',
      displayName: 'Ada',
      mail: ADA,
    });
  });

  it('answers 401 without a known token and 403 for another user’s mailbox', async () => {
    // Act
    const none = await graph('/me/messages', { token: null });
    const unknown = await graph('/me/messages', { token: 'nope' });
    const other = await graph(`/users/${BOB}/messages`);
    const missing = await graph('/users/nobody@contoso.test/messages');
    // Assess
    expect(none.status).toBe(401);
    expect(none.body.error).toMatchObject({ code: 'InvalidAuthenticationToken', message: 'Access token is empty.' });
    expect(none.body.error.innerError).toMatchObject({ 'request-id': expect.any(String), date: expect.any(String) });
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(unknown.status).toBe(401);
    expect(other.status).toBe(403);
    expect(other.body.error.code).toBe('ErrorAccessDenied');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('ErrorInvalidUser');
  });
});

describe('Mail folders', () => {
  it('lists the top-level folders a page at a time and gets one by well-known name', async () => {
    // Act
    const first = await graph('/me/mailFolders?$top=4');
    const second = await graph(first.body['@odata.nextLink']);
    const inbox = await graph('/me/mailFolders/Inbox');
    // Assess
    expect(first.body.value.map((f: { displayName: string }) => f.displayName)).toEqual([
      'Inbox',
      'Drafts',
      'Sent Items',
      'Deleted Items',
    ]);
    expect(second.body.value.map((f: { displayName: string }) => f.displayName)).toEqual([
      'Junk Email',
      'Archive',
      'Outbox',
    ]);
    expect(second.body['@odata.nextLink']).toBeUndefined();
    expect(inbox.body).toMatchObject({ id: fake.folderId(ADA, 'inbox'), displayName: 'Inbox', totalItemCount: 0 });
  });

  it('creates, renames, nests and deletes folders, and counts their items', async () => {
    // Prepare
    receive('One', 1);
    receive('Two', 2, { isRead: true });
    // Act
    const created = await graph('/me/mailFolders', { body: { displayName: 'Projects' } });
    const again = await graph('/me/mailFolders', { body: { displayName: 'projects' } });
    const child = await graph(`/me/mailFolders/${created.body.id}/childFolders`, { body: { displayName: 'Alpha' } });
    const renamed = await graph(`/me/mailFolders/${created.body.id}`, {
      method: 'PATCH',
      body: { displayName: 'Work' },
    });
    const children = await graph(`/me/mailFolders/${created.body.id}/childFolders`);
    const inbox = await graph('/me/mailFolders/inbox');
    const removed = await graph(`/me/mailFolders/${created.body.id}/childFolders/${child.body.id}`, {
      method: 'DELETE',
    });
    const gone = await graph(`/me/mailFolders/${child.body.id}`);
    const wellKnown = await graph('/me/mailFolders/inbox', { method: 'DELETE' });
    // Assess
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ displayName: 'Projects', childFolderCount: 0, totalItemCount: 0 });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('ErrorFolderExists');
    expect(child.body.parentFolderId).toBe(created.body.id);
    expect(renamed.body).toMatchObject({ displayName: 'Work', childFolderCount: 1 });
    expect(children.body.value).toEqual([expect.objectContaining({ displayName: 'Alpha' })]);
    expect(inbox.body).toMatchObject({ totalItemCount: 2, unreadItemCount: 1 });
    expect(removed.status).toBe(204);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('ErrorItemNotFound');
    expect(wellKnown.status).toBe(400);
  });
});

describe('Messages', () => {
  it('lists newest first, pages with $top and @odata.nextLink, selects and counts', async () => {
    // Prepare
    for (let i = 1; i <= 5; i++) receive(`Message ${i}`, i);
    // Act
    const first = await graph('/me/messages?$top=2&$select=subject,receivedDateTime&$count=true');
    const second = await graph(first.body['@odata.nextLink']);
    const third = await graph(second.body['@odata.nextLink']);
    const inFolder = await graph('/me/mailFolders/inbox/messages');
    const tooMany = await graph('/me/messages?$top=1001');
    // Assess
    expect(first.body['@odata.count']).toBe(5);
    expect(first.body.value).toEqual([
      {
        '@odata.etag': expect.any(String),
        id: expect.any(String),
        subject: 'Message 5',
        receivedDateTime: '2026-03-02T09:05:00Z',
      },
      expect.objectContaining({ subject: 'Message 4' }),
    ]);
    expect(first.body['@odata.nextLink']).toContain('%24skip=2');
    expect(second.body.value.map((m: { subject: string }) => m.subject)).toEqual(['Message 3', 'Message 2']);
    expect(third.body.value.map((m: { subject: string }) => m.subject)).toEqual(['Message 1']);
    expect(third.body['@odata.nextLink']).toBeUndefined();
    expect(inFolder.body.value).toHaveLength(5);
    expect(tooMany.status).toBe(400);
  });

  it('filters on read state, flag, attachments, dates, sender, conversation and categories, combined with and', async () => {
    // Prepare
    const a = receive('Invoice', 10, { isRead: true, categories: ['Finance'] });
    const b = receive('Lunch', 20, {
      from: 'dave@fabrikam.test',
      attachments: [{ name: 'menu.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF') }],
    });
    const c = receive('Re: Invoice', 30, { conversationId: a.conversationId });
    fake.changeOutside(ADA, { kind: 'flag', id: c.id, flagStatus: 'flagged' });
    const subjects = async (filter: string) => {
      const res = await graph(`/me/messages?$filter=${encodeURIComponent(filter)}`);
      expect(res.status).toBe(200);
      return res.body.value.map((m: { subject: string }) => m.subject).sort();
    };
    // Act / Assess
    expect(await subjects('isRead eq false')).toEqual(['Lunch', 'Re: Invoice']);
    expect(await subjects('isRead eq true')).toEqual(['Invoice']);
    expect(await subjects("flag/flagStatus eq 'flagged'")).toEqual(['Re: Invoice']);
    expect(await subjects('hasAttachments eq true')).toEqual(['Lunch']);
    expect(await subjects('receivedDateTime ge 2026-03-02T09:20:00Z')).toEqual(['Lunch', 'Re: Invoice']);
    expect(await subjects('receivedDateTime lt 2026-03-02T09:20:00Z')).toEqual(['Invoice']);
    expect(await subjects("from/emailAddress/address eq 'DAVE@fabrikam.test'")).toEqual(['Lunch']);
    expect(await subjects(`conversationId eq '${a.conversationId}'`)).toEqual(['Invoice', 'Re: Invoice']);
    expect(await subjects("categories/any(c:c eq 'finance')")).toEqual(['Invoice']);
    expect(await subjects('isRead eq false and hasAttachments eq false')).toEqual(['Re: Invoice']);
    expect(await subjects(`isRead eq false and receivedDateTime ge 2026-03-02T09:25:00Z`)).toEqual(['Re: Invoice']);
    expect(b.id).not.toBe(c.id);
  });

  it('refuses a filter Graph refuses, and one the fake cannot evaluate, never answering a wider result', async () => {
    // Act
    const unknown = await graph(`/me/messages?$filter=${encodeURIComponent("colour eq 'red'")}`);
    const mistyped = await graph(`/me/messages?$filter=${encodeURIComponent("isRead eq 'yes'")}`);
    const unsupported = await graph(`/me/messages?$filter=${encodeURIComponent("startswith(subject,'In')")}`);
    // Assess
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toBe(
      "Could not find a property named 'colour' on type 'microsoft.graph.message'.",
    );
    expect(mistyped.status).toBe(400);
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.error.message).toMatch(/not implemented by the local Graph fake/);
    expect(fake.violations()).toEqual([
      { kind: 'request', message: expect.stringContaining("the $filter function 'startswith()'") },
    ]);
    fake.clearViolations();
  });

  it('searches subject, body and sender, and refuses $search with $filter or $orderby as Graph does', async () => {
    // Prepare
    receive('Quarterly report', 1, { text: 'Numbers look good' });
    receive('Lunch', 2, { text: 'Pizza at noon', from: 'pat@fabrikam.test' });
    // Act
    const byBody = await graph('/me/messages?$search="pizza"');
    const bySender = await graph('/me/messages?$search="from:carol@fabrikam.test"');
    const withFilter = await graph('/me/messages?$search="pizza"&$filter=isRead eq false');
    const withOrder = await graph('/me/messages?$search="pizza"&$orderby=receivedDateTime desc');
    // Assess
    expect(byBody.body.value.map((m: { subject: string }) => m.subject)).toEqual(['Lunch']);
    expect(bySender.body.value.map((m: { subject: string }) => m.subject)).toEqual(['Quarterly report']);
    expect(withFilter.status).toBe(400);
    expect(withFilter.body.error.code).toBe('ErrorInvalidUrlQuery');
    expect(withOrder.status).toBe(400);
  });

  it('gets, updates, copies, moves and deletes a message; move answers it under a new id', async () => {
    // Prepare
    const { id } = receive('Report', 1);
    // Act
    const got = await graph(`/me/messages/${id}?$select=subject,isRead,flag`);
    const patched = await graph(`/me/messages/${id}`, {
      method: 'PATCH',
      body: { isRead: true, flag: { flagStatus: 'flagged' }, categories: ['Blue category'] },
    });
    const subject = await graph(`/me/messages/${id}`, { method: 'PATCH', body: { subject: 'Changed' } });
    const copied = await graph(`/me/messages/${id}/copy`, { body: { destinationId: 'archive' } });
    const moved = await graph(`/me/mailFolders/inbox/messages/${id}/move`, { body: { destinationId: 'deleteditems' } });
    const old = await graph(`/me/messages/${id}`);
    const deleted = await graph(`/me/messages/${moved.body.id}`, { method: 'DELETE' });
    const archive = await graph('/me/mailFolders/archive/messages');
    // Assess
    expect(got.body).toEqual({
      '@odata.context': expect.any(String),
      '@odata.etag': expect.any(String),
      id,
      subject: 'Report',
      isRead: false,
      flag: { flagStatus: 'notFlagged' },
    });
    expect(patched.body).toMatchObject({
      isRead: true,
      flag: { flagStatus: 'flagged' },
      categories: ['Blue category'],
    });
    expect(patched.body.changeKey).not.toBe(got.body.changeKey);
    expect(subject.status).toBe(400);
    expect(subject.body.error.code).toBe('ErrorInvalidPropertyUpdateSentMessage');
    expect(copied.status).toBe(201);
    expect(copied.body).toMatchObject({ subject: 'Report', parentFolderId: fake.folderId(ADA, 'archive') });
    expect(moved.status).toBe(201);
    expect(moved.body.id).not.toBe(id);
    expect(moved.body.parentFolderId).toBe(fake.folderId(ADA, 'deleteditems'));
    expect(old.status).toBe(404);
    expect(deleted.status).toBe(204);
    expect(archive.body.value).toHaveLength(1);
  });

  it('answers a message’s MIME at $value as text/plain, and its file attachments with their bytes', async () => {
    // Prepare
    const pdf = Buffer.from('%PDF-1.4 \u0000\u0001 invoice', 'latin1');
    const { id } = receive('Invoice 42', 1, {
      attachments: [{ name: 'invoice.pdf', contentType: 'application/pdf', content: pdf }],
    });
    // Act
    const mime = await graph(`/me/messages/${id}/$value`);
    const list = await graph(`/me/messages/${id}/attachments`);
    const one = await graph(`/me/mailFolders/inbox/messages/${id}/attachments/${list.body.value[0].id}`);
    const raw = await fetch(`${fake.url}/v1.0/me/messages/${id}/attachments/${list.body.value[0].id}/$value`, {
      headers: { Authorization: `Bearer ${ADA_TOKEN}` },
    });
    // Assess
    expect(mime.status).toBe(200);
    expect(mime.headers.get('content-type')).toBe('text/plain');
    expect(mime.text).toMatch(/^From: Carol <carol@fabrikam\.test>\r\n/);
    expect(mime.text).toContain('Subject: Invoice 42\r\n');
    expect(mime.text).toContain('Content-Type: multipart/mixed;');
    expect(mime.text).toContain(pdf.toString('base64'));
    expect(list.body.value).toEqual([
      expect.objectContaining({
        '@odata.type': '#microsoft.graph.fileAttachment',
        name: 'invoice.pdf',
        size: pdf.length,
        contentBytes: pdf.toString('base64'),
      }),
    ]);
    expect(one.body).toMatchObject({ name: 'invoice.pdf', contentType: 'application/pdf' });
    expect(raw.headers.get('content-type')).toBe('application/pdf');
    expect(Buffer.from(await raw.arrayBuffer())).toEqual(pdf);
  });
});

describe('Drafts and sending', () => {
  it('creates a draft, edits it, sends it to Sent Items and into a local recipient’s Inbox', async () => {
    // Act
    const draft = await graph('/me/messages', {
      body: {
        subject: 'Plan',
        body: { contentType: 'Text', content: 'First draft' },
        toRecipients: [{ emailAddress: { address: BOB } }],
        attachments: [
          {
            '@odata.type': '#microsoft.graph.fileAttachment',
            name: 'plan.txt',
            contentType: 'text/plain',
            contentBytes: Buffer.from('steps').toString('base64'),
          },
        ],
      },
    });
    const edited = await graph(`/me/messages/${draft.body.id}`, {
      method: 'PATCH',
      body: { subject: 'Plan v2', body: { contentType: 'HTML', content: '<p>Final</p>' } },
    });
    const sent = await graph(`/me/messages/${draft.body.id}/send`, { method: 'POST' });
    const drafts = await graph('/me/mailFolders/drafts/messages');
    const sentItems = await graph('/me/mailFolders/sentitems/messages');
    const bobInbox = await graph('/me/mailFolders/inbox/messages', { token: BOB_TOKEN });
    // Assess
    expect(draft.status).toBe(201);
    expect(draft.body).toMatchObject({
      isDraft: true,
      parentFolderId: fake.folderId(ADA, 'drafts'),
      hasAttachments: true,
    });
    expect(edited.body).toMatchObject({ subject: 'Plan v2', body: { contentType: 'html', content: '<p>Final</p>' } });
    expect(sent.status).toBe(202);
    expect(sent.text).toBe('');
    expect(drafts.body.value).toEqual([]);
    expect(sentItems.body.value).toEqual([expect.objectContaining({ subject: 'Plan v2', isDraft: false })]);
    expect(sentItems.body.value[0].id).not.toBe(draft.body.id);
    expect(bobInbox.body.value).toEqual([
      expect.objectContaining({
        subject: 'Plan v2',
        isRead: false,
        from: { emailAddress: { name: 'Ada', address: ADA } },
      }),
    ]);
  });

  it('sends with sendMail, saving to Sent Items unless told not to', async () => {
    // Prepare
    const message = {
      subject: 'Hello',
      body: { contentType: 'Text', content: 'Hi Bob' },
      toRecipients: [{ emailAddress: { address: BOB } }],
    };
    // Act
    const saved = await graph('/me/sendMail', { body: { message, saveToSentItems: true } });
    const unsaved = await graph('/me/sendMail', {
      body: { Message: { ...message, subject: 'Quiet' }, SaveToSentItems: false },
    });
    const noRecipient = await graph('/me/sendMail', { body: { message: { subject: 'Nobody' } } });
    const sentItems = await graph('/me/mailFolders/sentitems/messages');
    const drafts = await graph('/me/mailFolders/drafts/messages');
    const bobInbox = await graph('/me/messages', { token: BOB_TOKEN });
    // Assess
    expect(saved.status).toBe(202);
    expect(unsaved.status).toBe(202);
    expect(noRecipient.status).toBe(400);
    expect(noRecipient.body.error.code).toBe('ErrorInvalidRecipients');
    expect(sentItems.body.value.map((m: { subject: string }) => m.subject)).toEqual(['Hello']);
    expect(drafts.body.value).toEqual([]);
    expect(bobInbox.body.value.map((m: { subject: string }) => m.subject).sort()).toEqual(['Hello', 'Quiet']);
  });
});

/** A raw call with a body of another type than JSON (MIME in base64, an upload's bytes). */
async function raw(
  url: string,
  init: { method: string; body?: string | Buffer; headers?: Record<string, string> },
): Promise<Reply> {
  const res = await fetch(url.startsWith('http') ? url : `${fake.url}/v1.0${url}`, {
    method: init.method,
    headers: init.headers ?? {},
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const text = await res.text();
  const json = /json/.test(res.headers.get('content-type') ?? '') && text ? JSON.parse(text) : undefined;
  return { status: res.status, headers: res.headers, body: json, text };
}

const mimeOf = (lines: string[]) => Buffer.from(lines.join('\r\n')).toString('base64');

describe('MIME, replies and large attachments', () => {
  it('sends MIME in base64 with sendMail, keeping its headers, its Message-ID and its thread', async () => {
    // Prepare
    const original = receive('Question', 1);
    const mime = mimeOf([
      `From: Ada <${ADA}>`,
      `To: Bob <${BOB}>, "Carol, C." <carol@fabrikam.test>`,
      'Subject: Re: Question',
      'Message-ID: <answer-1@contoso.test>',
      `In-Reply-To: ${original.internetMessageId}`,
      'X-Tracking: 42',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<p>Yes</p>',
      '--b1',
      'Content-Type: text/plain; name="a.txt"',
      'Content-Disposition: attachment; filename="a.txt"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('attached').toString('base64'),
      '--b1--',
      '',
    ]);
    // Act
    const sent = await raw('/me/sendMail', {
      method: 'POST',
      body: mime,
      headers: { Authorization: `Bearer ${ADA_TOKEN}`, 'Content-Type': 'text/plain' },
    });
    const found = await graph(
      `/me/mailFolders/sentitems/messages?$filter=internetMessageId eq '<answer-1@contoso.test>'&$select=id,subject,conversationId,internetMessageHeaders,toRecipients,hasAttachments`,
    );
    const bobInbox = await graph('/me/messages?$select=subject,internetMessageHeaders', { token: BOB_TOKEN });
    const json = await graph('/me/sendMail', {
      body: { message: { subject: 'x', toRecipients: [{ emailAddress: { address: 'not an address' } }] } },
    });
    // Assess
    expect(sent.status).toBe(202);
    expect(found.body.value).toEqual([
      expect.objectContaining({
        subject: 'Re: Question',
        conversationId: original.conversationId,
        hasAttachments: true,
        toRecipients: [
          { emailAddress: { name: 'Bob', address: BOB } },
          { emailAddress: { name: 'Carol, C.', address: 'carol@fabrikam.test' } },
        ],
      }),
    ]);
    expect(found.body.value[0].internetMessageHeaders).toContainEqual({ name: 'X-Tracking', value: '42' });
    expect(bobInbox.body.value[0].internetMessageHeaders).toContainEqual({
      name: 'In-Reply-To',
      value: original.internetMessageId,
    });
    expect(json.status).toBe(400);
    expect(json.body.error.code).toBe('ErrorInvalidRecipients');
  });

  it('creates a draft from MIME, refuses MIME over 4 MB, and a text/plain body where none is described', async () => {
    // Act
    const created = await raw('/me/messages', {
      method: 'POST',
      body: mimeOf([`To: ${BOB}`, 'Subject: From MIME', 'Message-ID: <d1@contoso.test>', '', 'Plain body', '']),
      headers: { Authorization: `Bearer ${ADA_TOKEN}`, 'Content-Type': 'text/plain' },
    });
    const tooLarge = await raw('/me/sendMail', {
      method: 'POST',
      body: mimeOf([`To: ${BOB}`, 'Subject: Big', '', 'x'.repeat(3_200_000), '']),
      headers: { Authorization: `Bearer ${ADA_TOKEN}`, 'Content-Type': 'text/plain' },
    });
    const undescribed = await raw(`/me/messages/${created.body.id}/send`, {
      method: 'POST',
      body: 'aGVsbG8=',
      headers: { Authorization: `Bearer ${ADA_TOKEN}`, 'Content-Type': 'text/plain' },
    });
    // Assess
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      isDraft: true,
      subject: 'From MIME',
      internetMessageId: '<d1@contoso.test>',
      body: { contentType: 'text' },
    });
    expect(created.body.body.content.trim()).toBe('Plain body');
    expect(tooLarge.status).toBe(413);
    expect(undescribed.status).toBe(400);
    expect(fake.violations()).toEqual([
      expect.objectContaining({
        kind: 'request',
        message: expect.stringMatching(/message_send takes no request body/),
      }),
    ]);
    fake.clearViolations();
  });

  it("creates a reply draft in the answered message's conversation, with its threading headers", async () => {
    // Prepare
    const original = receive('Budget', 2);
    // Act
    const reply = await graph(`/me/messages/${original.id}/createReply`, {
      body: {
        message: {
          body: { contentType: 'Text', content: 'Agreed' },
          ccRecipients: [{ emailAddress: { address: BOB } }],
          internetMessageHeaders: [{ name: 'X-Ref', value: 'r1' }],
        },
      },
    });
    const read = await graph(`/me/messages/${reply.body.id}?$select=internetMessageHeaders,conversationId`);
    const both = await graph(`/me/messages/${original.id}/createReply`, {
      body: { comment: 'x', message: { body: { contentType: 'Text', content: 'y' } } },
    });
    const notCustom = await graph('/me/messages', {
      body: { subject: 'h', internetMessageHeaders: [{ name: 'Received', value: 'no' }] },
    });
    // Assess
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      subject: 'RE: Budget',
      isDraft: true,
      conversationId: original.conversationId,
      toRecipients: [{ emailAddress: { name: 'Carol', address: 'carol@fabrikam.test' } }],
      ccRecipients: [{ emailAddress: { address: BOB } }],
      body: { contentType: 'text', content: 'Agreed' },
    });
    expect(read.body.internetMessageHeaders).toEqual([
      { name: 'In-Reply-To', value: original.internetMessageId },
      { name: 'References', value: original.internetMessageId },
      { name: 'X-Ref', value: 'r1' },
    ]);
    expect(both.status).toBe(400);
    expect(notCustom.status).toBe(400);
    expect(notCustom.body.error.code).toBe('InvalidInternetMessageHeader');
  });

  it('adds and deletes small attachments, refusing one over 3 MB', async () => {
    // Prepare
    const draft = await graph('/me/messages', { body: { subject: 'Files' } });
    const file = (name: string, size: number) => ({
      '@odata.type': '#microsoft.graph.fileAttachment',
      name,
      contentType: 'application/octet-stream',
      contentBytes: Buffer.alloc(size, 7).toString('base64'),
    });
    // Act
    const added = await graph(`/me/messages/${draft.body.id}/attachments`, { body: file('one.bin', 10) });
    const tooLarge = await graph(`/me/messages/${draft.body.id}/attachments`, { body: file('big.bin', 3_200_000) });
    const removed = await graph(`/me/messages/${draft.body.id}/attachments/${added.body.id}`, { method: 'DELETE' });
    const left = await graph(`/me/messages/${draft.body.id}/attachments`);
    // Assess
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ name: 'one.bin', size: 10 });
    expect(tooLarge.status).toBe(413);
    expect(removed.status).toBe(204);
    expect(left.body.value).toEqual([]);
  });

  it('uploads a large attachment by ranges to the upload URL, checking each as Outlook does', async () => {
    // Prepare
    const draft = await graph('/me/messages', { body: { subject: 'Large' } });
    const size = 7 * 327_680 + 1_000;
    const bytes = Buffer.alloc(size, 3);
    bytes.write('start', 0);
    const session = (name: string, length = size) =>
      graph(`/me/messages/${draft.body.id}/attachments/createUploadSession`, {
        body: { AttachmentItem: { attachmentType: 'file', name, size: length, contentType: 'application/zip' } },
      });
    const put = (url: string, from: number, to: number, headers: Record<string, string> = {}) =>
      raw(url, {
        method: 'PUT',
        body: bytes.subarray(from, to + 1),
        headers: { 'Content-Range': `bytes ${from}-${to}/${size}`, ...headers },
      });
    // Act
    const tooSmall = await session('small.zip', 1_000);
    const { body: s1 } = await session('early.zip', 2_100_000);
    const created = await session('big.zip');
    const url = created.body.uploadUrl as string;
    const withToken = await put(url, 0, 327_679, { Authorization: `Bearer ${ADA_TOKEN}` });
    const notMultiple = await put(url, 0, 99_999);
    const first = await put(url, 0, 327_679);
    const skipped = await put(url, 327_680 * 2, size - 1);
    const second = await put(url, 327_680, 655_359);
    const last = await put(url, 655_360, size - 1);
    const again = await put(url, 655_360, size - 1);
    const listed = await graph(`/me/messages/${draft.body.id}/attachments`);
    clock += 7 * 3_600_000;
    const expired = await put(s1.uploadUrl, 0, 327_679);
    // Assess
    expect(tooSmall.status).toBe(400);
    expect(tooSmall.body.error.code).toBe('ErrorAttachmentSizeShouldNotBeLessThanMinimumSize');
    expect(created.status).toBe(201);
    expect(url.startsWith(fake.uploadUrl)).toBe(true);
    expect(created.body.nextExpectedRanges).toEqual(['0-']);
    expect(withToken.status).toBe(401);
    expect(notMultiple.status).toBe(400);
    expect(first.status).toBe(200);
    expect(first.body.nextExpectedRanges).toEqual(['327680']);
    expect(skipped.status).toBe(416);
    expect(second.status).toBe(200);
    expect(last.status).toBe(201);
    expect(last.headers.get('location')).toMatch(/Attachments\('/);
    expect(again.status).toBe(404);
    expect(listed.body.value).toEqual([
      expect.objectContaining({ name: 'big.zip', size, contentType: 'application/zip' }),
    ]);
    expect(Buffer.from(listed.body.value[0].contentBytes, 'base64').equals(bytes)).toBe(true);
    expect(expired.status).toBe(404);
  });
});

describe('Gaps closed: headers, KQL, hidden folders', () => {
  it('answers internetMessageHeaders only when $select names them', async () => {
    // Prepare
    const { id } = receive('Headers', 1);
    // Act
    const plain = await graph(`/me/messages/${id}`);
    const selected = await graph(`/me/messages/${id}?$select=subject,internetMessageHeaders`);
    // Assess
    expect(plain.body.internetMessageHeaders).toBeUndefined();
    expect(selected.body.internetMessageHeaders).toContainEqual({ name: 'Subject', value: 'Headers' });
  });

  it('searches with KQL OR, NOT and parentheses', async () => {
    // Prepare
    receive('Alpha report', 1);
    receive('Beta report', 2, { from: 'dan@fabrikam.test' });
    receive('Gamma memo', 3);
    const subjects = async (search: string) =>
      (await graph(`/me/messages?$search=${encodeURIComponent(search)}`)).body.value
        .map((m: { subject: string }) => m.subject)
        .sort();
    // Act
    const [either, grouped, negated, broken] = await Promise.all([
      subjects('"subject:alpha OR subject:gamma"'),
      subjects('"(from:dan OR subject:gamma) subject:report"'),
      subjects('"report NOT beta"'),
      graph(`/me/messages?$search=${encodeURIComponent('"(subject:alpha"')}`),
    ]);
    // Assess
    expect(either).toEqual(['Alpha report', 'Gamma memo']);
    expect(grouped).toEqual(['Beta report']);
    expect(negated).toEqual(['Alpha report']);
    expect(broken.status).toBe(400);
  });

  it('leaves hidden folders out unless includeHiddenFolders=true', async () => {
    // Prepare
    await graph('/me/mailFolders', { body: { displayName: 'Secret', isHidden: true } });
    // Act
    const shown = await graph('/me/mailFolders?$top=50');
    const all = await graph('/me/mailFolders?$top=50&includeHiddenFolders=true');
    // Assess
    const names = (r: Reply) => r.body.value.map((f: { displayName: string }) => f.displayName);
    expect(names(shown)).not.toContain('Secret');
    expect(names(all)).toContain('Secret');
  });
});

describe('Delta', () => {
  it('pages a first round, then reports changes since, @removed included, and refuses an expired deltaLink', async () => {
    // Prepare
    const [one, two, three] = [receive('One', 1), receive('Two', 2), receive('Three', 3)];
    const prefer = { Prefer: 'odata.maxpagesize=2' };
    // Act
    const page1 = await graph('/me/mailFolders/inbox/messages/delta?$select=subject,isRead', { headers: prefer });
    const page2 = await graph(page1.body['@odata.nextLink'], { headers: prefer });
    fake.changeOutside(ADA, { kind: 'read', id: one.id });
    const moved = fake.changeOutside(ADA, { kind: 'move', id: two.id, folder: 'archive' });
    fake.changeOutside(ADA, { kind: 'delete', id: three.id });
    const four = receive('Four', 4);
    const round2 = await graph(page2.body['@odata.deltaLink'], { headers: prefer });
    const round2b = await graph(round2.body['@odata.nextLink'], { headers: prefer });
    const quiet = await graph(round2b.body['@odata.deltaLink']);
    fake.expireDelta(ADA);
    const expired = await graph(quiet.body['@odata.deltaLink']);
    const archive = await graph('/me/mailFolders/archive/messages/delta');
    // Assess
    expect(page1.headers.get('preference-applied')).toBe('odata.maxpagesize=2');
    expect(page1.body.value).toEqual([
      {
        '@odata.type': '#microsoft.graph.message',
        '@odata.etag': expect.any(String),
        id: three.id,
        subject: 'Three',
        isRead: false,
      },
      expect.objectContaining({ id: two.id, subject: 'Two' }),
    ]);
    expect(page1.body['@odata.nextLink']).toMatch(/\/me\/mailFolders\('[^']+'\)\/messages\/delta\?\$skiptoken=/);
    expect(page1.body['@odata.deltaLink']).toBeUndefined();
    expect(page2.body.value.map((m: { id: string }) => m.id)).toEqual([one.id]);
    expect(page2.body['@odata.deltaLink']).toMatch(/\$deltatoken=/);
    const changes = [...round2.body.value, ...round2b.body.value];
    expect(changes).toEqual(
      expect.arrayContaining([
        { '@odata.type': '#microsoft.graph.message', id: two.id, '@removed': { reason: 'deleted' } },
        { '@odata.type': '#microsoft.graph.message', id: three.id, '@removed': { reason: 'deleted' } },
        expect.objectContaining({ id: one.id, isRead: true, subject: 'One' }),
        expect.objectContaining({ id: four.id, isRead: false, subject: 'Four' }),
      ]),
    );
    expect(changes).toHaveLength(4);
    expect(quiet.body.value).toEqual([]);
    expect(expired.status).toBe(410);
    expect(expired.body.error.code).toBe('syncStateNotFound');
    expect(archive.body.value.map((m: { id: string }) => m.id)).toEqual([moved!.id]);
  });
});

describe('$batch', () => {
  it('answers each request as if alone, a fault inside included, with dependsOn honoured', async () => {
    // Prepare
    const { id } = receive('Batched', 1);
    fake.inject({ path: /\/mailFolders\/drafts$/, status: 429, retryAfter: 7 });
    // Act
    const res = await graph('/$batch', {
      body: {
        requests: [
          { id: '1', method: 'GET', url: '/me?$select=mail' },
          { id: '2', method: 'GET', url: '/me/mailFolders/drafts' },
          {
            id: '3',
            method: 'PATCH',
            url: `/me/messages/${id}`,
            headers: { 'Content-Type': 'application/json' },
            body: { isRead: true },
          },
          { id: '4', method: 'GET', url: '/me/mailFolders/inbox', dependsOn: ['2'] },
          { id: '5', method: 'GET', url: `/me/messages/${id}/$value` },
        ],
      },
    });
    // Assess
    expect(res.status).toBe(200);
    const byId = Object.fromEntries(res.body.responses.map((r: { id: string }) => [r.id, r]));
    expect(byId['1']).toMatchObject({ status: 200, body: { mail: ADA } });
    expect(byId['2']).toMatchObject({
      status: 429,
      headers: { 'Retry-After': '7' },
      body: { error: { code: 'TooManyRequests' } },
    });
    expect(byId['3']).toMatchObject({ status: 200, body: { isRead: true } });
    expect(byId['4']).toMatchObject({ status: 424 });
    expect(Buffer.from(byId['5'].body, 'base64').toString()).toContain('Subject: Batched');
    expect(
      fake
        .requests()
        .filter((r) => r.inBatch)
        .map((r) => r.status),
    ).toEqual([200, 429, 200, 200]);
  });

  it('refuses more than 20 requests as a violation', async () => {
    // Act
    const requests = Array.from({ length: 21 }, (_, i) => ({ id: String(i), method: 'GET', url: '/me' }));
    const res = await graph('/$batch', { body: { requests } });
    // Assess
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/must NOT have more than 20 items/);
    expect(fake.violations()).toHaveLength(1);
    fake.clearViolations();
  });
});

describe('Faults and checks', () => {
  it('answers an injected 429 with Retry-After, then serves the request again', async () => {
    // Prepare
    fake.inject({ path: /\/me\/messages$/, method: 'GET', status: 429, retryAfter: 3 });
    // Act
    const throttled = await graph('/me/messages');
    const served = await graph('/me/messages');
    // Assess
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('3');
    expect(throttled.body.error.code).toBe('TooManyRequests');
    expect(served.status).toBe(200);
  });

  it('records a request the description forbids and answers it 400 in Graph’s error shape', async () => {
    // Prepare
    const { id } = receive('Strict', 1);
    // Act
    const res = await graph(`/me/messages/${id}`, { method: 'PATCH', body: { isRead: true, folder: 'inbox' } });
    const unread = await graph(`/me/messages/${id}?$select=isRead`);
    // Assess
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'BadRequest', innerError: { 'request-id': expect.any(String) } });
    expect(unread.body.isRead).toBe(false);
    expect(fake.violations()).toEqual([
      {
        kind: 'request',
        message: "request of user_UpdateMessage: / has property 'folder', which the description does not declare",
      },
    ]);
    fake.clearViolations();
  });

  it('turns an answer mangled against the description into a 500 and a response violation', async () => {
    // Prepare
    receive('Mangled', 1);
    fake.inject({
      path: /\/me\/messages$/,
      mangleAnswer: (body) => {
        const page = body as { value: Record<string, unknown>[] };
        return { ...page, value: page.value.map((m) => ({ ...m, isRead: 'true' })) };
      },
    });
    // Act
    const res = await graph('/me/messages');
    // Assess
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('generalException');
    expect(fake.violations()).toEqual([
      { kind: 'response', message: 'response of user_ListMessage: /value/0/isRead must be boolean,null' },
    ]);
    fake.clearViolations();
  });
});
