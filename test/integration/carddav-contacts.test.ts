import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as db from '#shared/db/contacts';
import { getGrant, type GrantRecord } from '#shared/db/grants';
import { inboxContactId } from '#shared/contacts/stored';
import {
  cardDavContactId,
  cardDavContacts,
  cardDavGroupId,
  syncAddressBook,
  type CardDavContext,
} from '#shared/dav/contacts';
import { DavClient } from '#shared/dav/client';
import { parseVCard, writeContactVCard, writeGroupVCard } from '#shared/dav/vcard';
import { ApiError, ConflictError, InvalidRequestError } from '#shared/errors';
import type { ApplicationId, ContactId, GrantId } from '#shared/ids';
import { startRadicale, type RunningRadicale } from '../../scripts/local-stack/radicale';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { outboxDrained } from '../support/outbox-relay';
import { createTestQueue, drainQueue, messagesIn } from '../support/queues';
import { rememberSecret } from '../support/secrets';

/**
 * CardDAV contacts (shared/dav/contacts.ts) against a real Radicale: the sync of an address book into
 * the grant's stored contacts and groups (quiet first run, changes and deletions by another client,
 * malformed vCards, an unknown sync token), and the provider's writes, which reach the server first
 * under ETag preconditions (a stale ETag is a 409 and stores the server's version).
 */
const PASSWORD = 'radicale carddav contacts password';
let radicale: RunningRadicale;
let fanout: string;

beforeAll(async () => {
  rememberSecret(PASSWORD, 'the Radicale test account password');
  fanout = await createTestQueue('carddav-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  radicale = await startRadicale({ accounts: [{ user: 'ann', password: PASSWORD }] });
});
afterAll(async () => {
  await radicale?.stop();
});
const { api, applicationId } = useApi();

const authorization = `Basic ${Buffer.from(`ann:${PASSWORD}`).toString('base64')}`;
const client = () =>
  new DavClient({
    fetch: (input, init) => fetch(input, init),
    auth: { type: 'basic', username: 'ann', password: PASSWORD },
  });

/** What "another client" does: a raw request to Radicale. */
async function raw(method: string, url: string, body?: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method,
    body,
    headers: { authorization, ...(body ? { 'content-type': 'text/vcard; charset=utf-8' } : {}), ...headers },
  });
  return { status: response.status, etag: response.headers.get('etag'), text: await response.text() };
}

/** A fresh grant with an empty address book of its own. */
async function setup(): Promise<{ grant: GrantRecord; book: string; ctx: CardDavContext }> {
  const agent = await makeAgentGrant(api);
  const grant = (await getGrant(applicationId() as ApplicationId, agent.id as GrantId))!;
  const book = `${radicale.url}ann/book-${randomUUID()}/`;
  await client().makeAddressBook(book, { name: 'Contacts' });
  // The grant's own notifications (grant.created) are not this file's business.
  await outboxDrained();
  while ((await messagesIn(fanout)) > 0) await drainQueue(fanout, 100, 1000);
  return { grant, book, ctx: { grant, client: client(), addressBook: book } };
}

/** Notifications published for the grant since the last call (waits until the outbox is drained). */
async function notifications(grant: GrantRecord, count: number) {
  await outboxDrained();
  const events = count ? await drainQueue(fanout, count, 10_000) : [];
  expect(await messagesIn(fanout)).toBe(0);
  for (const event of events) expect(event.body.data.grant_id).toBe(grant.id);
  return events.map((e) => ({ type: e.body.type as string, object: e.body.data.object }));
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

const ANN_UID = 'contact-ann';
const BOB_UID = '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f';
const annCard = (surname = 'Lee') =>
  writeContactVCard(ANN_UID, { given_name: 'Ann', surname, emails: [{ email: 'ann@example.org', type: 'work' }] });
const bobCard = () =>
  writeContactVCard(
    BOB_UID,
    { given_name: 'Bob', phone_numbers: [{ number: '+1 555 0100', type: 'mobile' }] },
    { version: '4.0' },
  );

/** ann.vcf, bob.vcf (vCard 4) and friends.vcf (a group of both), put by another client. */
async function seed(book: string) {
  expect((await raw('PUT', `${book}ann.vcf`, annCard())).status).toBe(201);
  expect((await raw('PUT', `${book}bob.vcf`, bobCard())).status).toBe(201);
  expect(
    (await raw('PUT', `${book}friends.vcf`, writeGroupVCard('group-friends', 'Friends', [ANN_UID, BOB_UID]))).status,
  ).toBe(201);
}

const provider = () =>
  cardDavContacts(async (grant) => ({ grant, client: client(), addressBook: bookOf.get(grant.id)! }));
const bookOf = new Map<string, string>();

describe('syncAddressBook', () => {
  it('mirrors the address book quietly on the first run, then changes and deletions by another client with notifications', async () => {
    const { grant, book, ctx } = await setup();
    bookOf.set(grant.id, book);
    await seed(book);
    const first = await syncAddressBook(ctx, {}, { quiet: true });
    expect(first).toMatchObject({ changed: 3, deleted: 0, skipped: [] });
    expect(first.token).toBeTruthy();
    const annId = cardDavContactId(grant.id, `${book}ann.vcf`);
    const bobId = cardDavContactId(grant.id, `${book}bob.vcf`);
    const friendsId = cardDavGroupId(grant.id, `${book}friends.vcf`);

    const listed = await provider().list(grant, {}, 50);
    expect(listed.items.map((c) => c.id).sort()).toEqual([annId, bobId].sort());
    const ann = await provider().get(grant, annId, {});
    expect(ann).toMatchObject({
      id: annId,
      source: 'address_book',
      given_name: 'Ann',
      surname: 'Lee',
      emails: [{ email: 'ann@example.org', type: 'work' }],
      groups: [{ id: friendsId }],
    });
    // The CardDAV bookkeeping is not part of the answer.
    expect(ann).not.toHaveProperty('href');
    expect(ann).not.toHaveProperty('etag');
    expect(ann).not.toHaveProperty('vcard_uid');
    expect((await provider().get(grant, bobId, {})).phone_numbers).toEqual([{ number: '+1 555 0100', type: 'mobile' }]);
    expect((await provider().listGroups(grant, {}, 50)).items).toEqual([
      {
        id: friendsId,
        object: 'contact_group',
        grant_id: grant.id,
        name: 'Friends',
        group_type: 'user',
        path: 'Friends',
      },
    ]);
    expect((await provider().list(grant, { group: friendsId }, 50)).items).toHaveLength(2);
    expect((await provider().list(grant, { email: 'ANN@example.org' }, 50)).items.map((c) => c.id)).toEqual([annId]);
    const record = (await db.getContact(grant.id, annId))!;
    expect(record).toMatchObject({ href: `${book}ann.vcf`, vcard_uid: ANN_UID });
    expect(record.etag).toBeTruthy();
    expect(await notifications(grant, 0)).toEqual([]);

    // The same sync again (from its token, or from nothing) writes nothing.
    expect(await syncAddressBook(ctx, { token: first.token })).toMatchObject({ changed: 0, deleted: 0, skipped: [] });
    expect(await syncAddressBook(ctx, {})).toMatchObject({ changed: 0, deleted: 0, skipped: [] });
    expect((await db.getContact(grant.id, annId))!.version).toBe(record.version);
    expect(await notifications(grant, 0)).toEqual([]);

    // Another client changes Ann and deletes Bob.
    expect((await raw('PUT', `${book}ann.vcf`, annCard('Lee-Smith'))).status).toBe(201);
    const second = await syncAddressBook(ctx, { token: first.token });
    expect(second).toMatchObject({ changed: 1, deleted: 0 });
    expect((await provider().get(grant, annId, {})).surname).toBe('Lee-Smith');
    const changed = await notifications(grant, 1);
    expect(changed).toEqual([
      {
        type: 'contact.updated',
        object: expect.objectContaining({ id: annId, surname: 'Lee-Smith', groups: [{ id: friendsId }] }),
      },
    ]);
    expect(changed[0]!.object).not.toHaveProperty('etag');

    expect((await raw('DELETE', `${book}bob.vcf`)).status).toBe(200);
    const third = await syncAddressBook(ctx, { token: second.token });
    expect(third).toMatchObject({ changed: 0, deleted: 1 });
    expect(await db.getContact(grant.id, bobId)).toBeUndefined();
    expect(await notifications(grant, 1)).toEqual([
      { type: 'contact.deleted', object: expect.objectContaining({ id: bobId, given_name: 'Bob' }) },
    ]);
    expect(await syncAddressBook(ctx, { token: third.token })).toMatchObject({ changed: 0, deleted: 0 });
  });

  it('skips a malformed vCard and reports it while the rest syncs; a vCard without UID takes its href', async () => {
    const { grant, book, ctx } = await setup();
    await seed(book);
    // Radicale takes a vCard nested in another (vCard 2.1's AGENT); the mapping reads none.
    const broken =
      'BEGIN:VCARD\r\nVERSION:3.0\r\nUID:broken-1\r\nFN:Broken\r\nN:Broken;;;;\r\nBEGIN:VCARD\r\nVERSION:3.0\r\nFN:Inner\r\nEND:VCARD\r\nEND:VCARD\r\n';
    const put = await raw('PUT', `${book}broken.vcf`, broken);
    expect(put.status, put.text).toBe(201);
    const noUid = await raw(
      'PUT',
      `${book}no-uid.vcf`,
      'BEGIN:VCARD\r\nVERSION:3.0\r\nUID:urn:uuid:\r\nFN:Nameless Uid\r\nN:Uid;Nameless;;;\r\nEND:VCARD\r\n',
    );
    expect(noUid.status, noUid.text).toBe(201);
    const result = await syncAddressBook(ctx, {}, { quiet: true });
    expect(result.changed).toBe(4);
    expect(result.skipped).toEqual([{ url: `${book}broken.vcf`, reason: expect.stringContaining('nested BEGIN') }]);
    expect(await db.getContact(grant.id, cardDavContactId(grant.id, `${book}broken.vcf`))).toBeUndefined();
    expect((await db.allContacts(grant.id, 'address_book')).length).toBe(3);
    // Radicale refuses a vCard without UID line; an empty urn:uuid: is no UID either: the href stands in.
    const noUidRecord = (await db.getContact(grant.id, cardDavContactId(grant.id, `${book}no-uid.vcf`)))!;
    expect(noUidRecord).toMatchObject({ given_name: 'Nameless', surname: 'Uid' });
    expect(noUidRecord.vcard_uid).toBe(`${book}no-uid.vcf`);
    // Reported again while it stays broken; nothing else is written.
    expect(await syncAddressBook(ctx, { token: result.token })).toMatchObject({ changed: 0, skipped: [] });
    expect((await syncAddressBook(ctx, {})).skipped).toHaveLength(1);
  });

  it('falls back to a full listing when the server no longer knows the token', async () => {
    const { grant, book, ctx } = await setup();
    await seed(book);
    const first = await syncAddressBook(ctx, {}, { quiet: true });
    await notifications(grant, 0);
    expect((await raw('PUT', `${book}ann.vcf`, annCard('Changed'))).status).toBe(201);
    expect((await raw('DELETE', `${book}bob.vcf`)).status).toBe(200);
    const unknown = 'http://radicale.org/ns/sync/0000000000000000000000000000000000000000000000000000000000000000';
    const result = await syncAddressBook(ctx, { token: unknown });
    expect(result).toMatchObject({ changed: 1, deleted: 1, skipped: [] });
    expect(result.token).not.toBe(unknown);
    expect(result.token).not.toBe(first.token);
    expect((await db.getContact(grant.id, cardDavContactId(grant.id, `${book}ann.vcf`)))!.surname).toBe('Changed');
    expect(await db.getContact(grant.id, cardDavContactId(grant.id, `${book}bob.vcf`))).toBeUndefined();
    expect((await notifications(grant, 2)).map((n) => n.type).sort()).toEqual(['contact.deleted', 'contact.updated']);
    // The new token works.
    expect(await syncAddressBook(ctx, { token: result.token })).toMatchObject({ changed: 0, deleted: 0 });
  });
});

describe('cardDavContacts', () => {
  it('creates, changes and deletes contacts on the server first, with notifications; the sync then writes nothing', async () => {
    const { grant, book, ctx } = await setup();
    bookOf.set(grant.id, book);
    const contacts = provider();
    const created = await contacts.create(grant, {
      given_name: 'Cara',
      surname: 'Diaz',
      emails: [{ email: 'cara@example.org' }],
      birthday: '--04-01',
    });
    expect(created).toMatchObject({ object: 'contact', source: 'address_book', given_name: 'Cara', groups: [] });
    expect(created).not.toHaveProperty('href');
    const record = (await db.getContact(grant.id, created.id as ContactId))!;
    expect(record.href).toMatch(new RegExp(`^${book}[0-9a-f-]{36}\\.vcf$`));
    expect(created.id).toBe(cardDavContactId(grant.id, record.href!));
    const onServer = await raw('GET', record.href!);
    expect(onServer.etag).toBe(record.etag);
    expect(parseVCard(onServer.text)).toMatchObject({
      kind: 'individual',
      uid: record.vcard_uid,
      fields: { given_name: 'Cara', surname: 'Diaz', birthday: '--04-01', emails: [{ email: 'cara@example.org' }] },
    });

    const changed = await contacts.update(grant, created.id, {
      surname: 'Diaz-Ortiz',
      notes: 'Met at the fair',
      emails: [],
    });
    expect(changed).toMatchObject({
      id: created.id,
      given_name: 'Cara',
      surname: 'Diaz-Ortiz',
      notes: 'Met at the fair',
      emails: [],
    });
    const after = parseVCard((await raw('GET', record.href!)).text);
    expect(after).toMatchObject({ uid: record.vcard_uid, fields: { surname: 'Diaz-Ortiz', notes: 'Met at the fair' } });
    expect(after.kind === 'individual' && after.fields.emails).toBeFalsy();
    expect((await contacts.get(grant, created.id, {})).surname).toBe('Diaz-Ortiz');

    // What the API wrote is what the server has: a sync finds nothing to do.
    expect(await syncAddressBook(ctx, {})).toMatchObject({ changed: 0, deleted: 0 });

    await contacts.delete(grant, created.id);
    expect((await raw('GET', record.href!)).status).toBe(404);
    expect(await db.getContact(grant.id, created.id as ContactId)).toBeUndefined();
    const events = await notifications(grant, 3);
    expect(events.map((e) => [e.type, e.object.id])).toEqual([
      ['contact.updated', created.id],
      ['contact.updated', created.id],
      ['contact.deleted', created.id],
    ]);
    expect(events[1]!.object.surname).toBe('Diaz-Ortiz');
    expect(await syncAddressBook(ctx, {})).toMatchObject({ changed: 0, deleted: 0 });
    expect(await rejection(contacts.create(grant, { notes: 'nobody' }))).toBeInstanceOf(InvalidRequestError);
  });

  it('never overwrites a change another client made first: 409, and the server version is stored', async () => {
    const { grant, book } = await setup();
    bookOf.set(grant.id, book);
    const contacts = provider();
    const created = await contacts.create(grant, { given_name: 'Dan', company_name: 'Acme' });
    const record = (await db.getContact(grant.id, created.id as ContactId))!;
    await notifications(grant, 1);
    // Another client edits first.
    expect(
      (
        await raw(
          'PUT',
          record.href!,
          writeContactVCard(record.vcard_uid!, { given_name: 'Daniel', company_name: 'Acme Corp' }),
        )
      ).status,
    ).toBeLessThan(300);
    const error = await rejection(contacts.update(grant, created.id, { job_title: 'CEO' }));
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).message).toMatch(/changed on the server by another client; fetch it again/);
    const now = await contacts.get(grant, created.id, {});
    expect(now).toMatchObject({ given_name: 'Daniel', company_name: 'Acme Corp' });
    expect(now.job_title).toBeUndefined();
    expect(parseVCard((await raw('GET', record.href!)).text)).toMatchObject({ fields: { given_name: 'Daniel' } });
    expect(await notifications(grant, 1)).toEqual([
      { type: 'contact.updated', object: expect.objectContaining({ id: created.id, given_name: 'Daniel' }) },
    ]);

    // The same for a delete; with the server's version stored, the next one goes through.
    expect(
      (await raw('PUT', record.href!, writeContactVCard(record.vcard_uid!, { given_name: 'Dani' }))).status,
    ).toBeLessThan(300);
    expect(await rejection(contacts.delete(grant, created.id))).toBeInstanceOf(ConflictError);
    expect((await contacts.get(grant, created.id, {})).given_name).toBe('Dani');
    expect((await raw('GET', record.href!)).status).toBe(200);
    await contacts.update(grant, created.id, { job_title: 'CTO' });
    expect(parseVCard((await raw('GET', record.href!)).text)).toMatchObject({
      fields: { given_name: 'Dani', job_title: 'CTO' },
    });

    // Deleted on the server meanwhile: the record goes too, and the change is a 404.
    expect((await raw('DELETE', record.href!)).status).toBe(200);
    expect(await rejection(contacts.update(grant, created.id, { job_title: 'CFO' }))).toMatchObject({ status: 404 });
    expect(await db.getContact(grant.id, created.id as ContactId)).toBeUndefined();
  });

  it('keeps group memberships in the group vCards: create, join, leave, another client adding, rename, delete', async () => {
    const { grant, book, ctx } = await setup();
    bookOf.set(grant.id, book);
    const contacts = provider();
    expect(
      await rejection(contacts.createGroup(grant, { name: 'Sub', parent_id: 'ctg_01J00000000000000000000000' })),
    ).toBeInstanceOf(InvalidRequestError);
    const team = await contacts.createGroup(grant, { name: 'Team' });
    expect(team).toMatchObject({ object: 'contact_group', name: 'Team', path: 'Team', group_type: 'user' });
    expect(await rejection(contacts.createGroup(grant, { name: 'team' }))).toBeInstanceOf(ConflictError);
    const teamRecord = (await db.allContactGroups(grant.id)).find((g) => g.id === team.id)!;
    expect(parseVCard((await raw('GET', teamRecord.href!)).text)).toEqual({
      kind: 'group',
      uid: teamRecord.vcard_uid,
      name: 'Team',
      members: [],
    });

    const eve = await contacts.create(grant, { given_name: 'Eve', groups: [{ id: team.id }] });
    expect(eve.groups).toEqual([{ id: team.id }]);
    const eveRecord = (await db.getContact(grant.id, eve.id as ContactId))!;
    expect(parseVCard((await raw('GET', teamRecord.href!)).text)).toMatchObject({ members: [eveRecord.vcard_uid] });
    const fay = await contacts.create(grant, { given_name: 'Fay' });
    const fayRecord = (await db.getContact(grant.id, fay.id as ContactId))!;

    // Eve leaves, Fay joins.
    expect((await contacts.update(grant, eve.id, { groups: [] })).groups).toEqual([]);
    expect((await contacts.update(grant, fay.id, { groups: [{ id: team.id }] })).groups).toEqual([{ id: team.id }]);
    expect(parseVCard((await raw('GET', teamRecord.href!)).text)).toMatchObject({ members: [fayRecord.vcard_uid] });
    expect((await contacts.list(grant, { group: team.id }, 50)).items.map((c) => c.id)).toEqual([fay.id]);
    expect(await syncAddressBook(ctx, {})).toMatchObject({ changed: 0, deleted: 0 });
    await notifications(grant, 4);

    // Another client adds Eve back: the sync gives Eve the group, with contact.updated.
    const current = await raw('GET', teamRecord.href!);
    expect(
      (
        await raw(
          'PUT',
          teamRecord.href!,
          writeGroupVCard(teamRecord.vcard_uid!, 'Team', [fayRecord.vcard_uid!, eveRecord.vcard_uid!]),
          { 'if-match': current.etag! },
        )
      ).status,
    ).toBeLessThan(300);
    const synced = await syncAddressBook(ctx, {});
    expect(synced).toMatchObject({ changed: 2, deleted: 0 }); // the group and Eve
    expect((await contacts.get(grant, eve.id, {})).groups).toEqual([{ id: team.id }]);
    expect(await notifications(grant, 1)).toEqual([
      { type: 'contact.updated', object: expect.objectContaining({ id: eve.id, groups: [{ id: team.id }] }) },
    ]);

    // Rename and delete reach the server; the members leave the deleted group.
    expect(await contacts.updateGroup(grant, team.id, { name: 'Crew' })).toMatchObject({ id: team.id, name: 'Crew' });
    expect(parseVCard((await raw('GET', teamRecord.href!)).text)).toMatchObject({
      kind: 'group',
      name: 'Crew',
      members: expect.arrayContaining([eveRecord.vcard_uid, fayRecord.vcard_uid]),
    });
    expect((await contacts.listGroups(grant, {}, 50)).items.map((g) => g.name)).toEqual(['Crew']);
    await contacts.deleteGroup(grant, team.id);
    expect((await raw('GET', teamRecord.href!)).status).toBe(404);
    expect((await contacts.listGroups(grant, {}, 50)).items).toEqual([]);
    expect((await contacts.get(grant, eve.id, {})).groups).toEqual([]);
    expect((await notifications(grant, 2)).map((n) => n.type)).toEqual(['contact.updated', 'contact.updated']);
    expect(await syncAddressBook(ctx, {})).toMatchObject({ changed: 0, deleted: 0 });
  });

  it('re-reads a group another client changed first: a rename answers 409 and stores the server version', async () => {
    const { grant, book } = await setup();
    bookOf.set(grant.id, book);
    const contacts = provider();
    const group = await contacts.createGroup(grant, { name: 'Club' });
    const record = (await db.allContactGroups(grant.id)).find((g) => g.id === group.id)!;
    expect(
      (await raw('PUT', record.href!, writeGroupVCard(record.vcard_uid!, 'Club (theirs)', []))).status,
    ).toBeLessThan(300);
    expect(await rejection(contacts.updateGroup(grant, group.id, { name: 'Club (ours)' }))).toBeInstanceOf(
      ConflictError,
    );
    expect((await contacts.listGroups(grant, {}, 50)).items.map((g) => g.name)).toEqual(['Club (theirs)']);
    expect(parseVCard((await raw('GET', record.href!)).text)).toMatchObject({ name: 'Club (theirs)' });
    expect(await contacts.updateGroup(grant, group.id, { name: 'Club (ours)' })).toMatchObject({ name: 'Club (ours)' });
    expect(parseVCard((await raw('GET', record.href!)).text)).toMatchObject({ name: 'Club (ours)' });
  });

  it('leaves contacts collected from mail stored-only', async () => {
    const { grant, book } = await setup();
    bookOf.set(grant.id, book);
    const contacts = provider();
    const now = Math.floor(Date.now() / 1000);
    const id = inboxContactId(grant.id, 'pen@example.org');
    const inbox = {
      id,
      grant_id: grant.id,
      source: 'inbox' as const,
      given_name: 'Pen',
      emails: [{ email: 'pen@example.org' }],
      group_ids: [],
      email_index: ['pen@example.org'],
      phone_index: [],
      created_at: now,
      updated_at: now,
      version: 1,
    };
    expect(await db.writeInboxContact(inbox, undefined)).toBe(true);
    expect(
      (await contacts.list(grant, { source: 'inbox', email: 'pen@example.org' }, 50)).items.map((c) => c.id),
    ).toEqual([id]);
    expect((await contacts.list(grant, { source: 'domain' }, 50)).items).toEqual([]);
    expect(await rejection(contacts.update(grant, id, { surname: 'Pal' }))).toBeInstanceOf(InvalidRequestError);
    await contacts.delete(grant, id);
    expect(await db.getContact(grant.id, id)).toBeUndefined();
    expect(await client().listObjects(book)).toEqual([]);
  });

  it('answers a server that cannot be reached with a 503', async () => {
    const { grant } = await setup();
    const down = cardDavContacts(async (g) => ({
      grant: g,
      client: client(),
      addressBook: 'http://127.0.0.1:9/ann/book/',
    }));
    const error = await rejection(down.create(grant, { given_name: 'Gil' }));
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 503, expose: true });
  });
});
