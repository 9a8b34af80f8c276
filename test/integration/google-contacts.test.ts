import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { googleContacts } from '#shared/google/contacts';
import { googleClientOf, GoogleRequestError } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Provider A's contacts, live (shared/google/contacts.ts), against the local Google fake's People
 * API: create, read, list with filters, change with the contact's etag, groups and membership.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google contacts'));
});

afterAll(async () => {
  await fake?.close();
});

describe("provider A's contacts, live", () => {
  it('creates, reads, lists, changes and deletes a contact, its groups included', async () => {
    const group = await googleContacts.createGroup(grant, { name: 'Suppliers' });
    expect(group).toMatchObject({ object: 'contact_group', name: 'Suppliers', group_type: 'user', path: 'Suppliers' });
    const created = await googleContacts.create(grant, {
      given_name: 'Ann',
      surname: 'Lee',
      birthday: '--04-12',
      company_name: 'Acme',
      job_title: 'Buyer',
      notes: 'Prefers mail',
      emails: [{ email: 'ann@acme.example', type: 'work' }],
      phone_numbers: [{ number: '+1 555 0100', type: 'mobile' }],
      physical_addresses: [{ type: 'work', street_address: '1 Main St', city: 'Springfield', country: 'US' }],
      web_pages: [{ url: 'https://acme.example', type: 'work' }],
      groups: [{ id: group.id }],
    });
    expect(created).toMatchObject({
      object: 'contact',
      source: 'address_book',
      given_name: 'Ann',
      surname: 'Lee',
      birthday: '--04-12',
      company_name: 'Acme',
      job_title: 'Buyer',
      notes: 'Prefers mail',
      emails: [{ email: 'ann@acme.example', type: 'work' }],
      phone_numbers: [{ number: '+1 555 0100', type: 'mobile' }],
      physical_addresses: [{ type: 'work', street_address: '1 Main St', city: 'Springfield', country: 'US' }],
    });
    expect(created.groups.map((g) => g.id)).toContain(group.id);
    expect(await googleContacts.get(grant, created.id, {})).toMatchObject({ given_name: 'Ann' });
    await googleContacts.create(grant, { given_name: 'Bob', emails: [{ email: 'bob@example.org' }] });

    expect((await googleContacts.list(grant, {}, 50)).items.map((c) => c.given_name).sort()).toEqual(['Ann', 'Bob']);
    expect((await googleContacts.list(grant, { email: 'ANN@acme.example' }, 50)).items.map((c) => c.id)).toEqual([
      created.id,
    ]);
    expect((await googleContacts.list(grant, { phone_number: '+15550100' }, 50)).items).toHaveLength(1);
    expect((await googleContacts.list(grant, { group: group.id }, 50)).items.map((c) => c.id)).toEqual([created.id]);
    await expect(googleContacts.list(grant, { source: 'domain' }, 50)).rejects.toThrow(InvalidRequestError);

    const changed = await googleContacts.update(grant, created.id, { job_title: 'Head buyer', emails: [] });
    expect(changed).toMatchObject({ given_name: 'Ann', job_title: 'Head buyer', emails: [] });

    // A stale etag: People's FAILED_PRECONDITION, which a contact change answers as a 409.
    const client = await googleClientOf(grant);
    const stale = await client
      .call({
        api: 'people',
        method: 'PATCH',
        path: `/v1/people/${created.id}:updateContact`,
        query: { updatePersonFields: 'nicknames' },
        body: { etag: 'stale-etag', nicknames: [{ value: 'A' }] },
      })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(GoogleRequestError);
    expect((stale as GoogleRequestError).googleStatus).toBe('FAILED_PRECONDITION');

    const renamed = await googleContacts.updateGroup(grant, group.id, { name: 'Vendors' });
    expect(renamed.name).toBe('Vendors');
    expect((await googleContacts.listGroups(grant, {}, 50)).items.map((g) => g.name)).toContain('Vendors');

    await googleContacts.delete(grant, created.id);
    await expect(googleContacts.get(grant, created.id, {})).rejects.toThrow(NotFoundError);
    await googleContacts.deleteGroup(grant, group.id);
    await expect(googleContacts.get(grant, 'people-x', {})).rejects.toThrow(NotFoundError);
  });

  it("lists Gmail's other contacts as source=inbox, filtered by email, in no group", async () => {
    const carol = fake.addOtherContact(email, { email: 'carol@example.net', name: 'Carol Danvers' });
    const dave = fake.addOtherContact(email, { email: 'dave@example.net' });
    const inbox = await googleContacts.list(grant, { source: 'inbox' }, 50);
    expect(inbox.items.map((c) => [c.id, c.source, c.emails])).toEqual([
      [carol, 'inbox', [{ email: 'carol@example.net', type: 'other' }]],
      [dave, 'inbox', [{ email: 'dave@example.net', type: 'other' }]],
    ]);
    expect(inbox.items[0]).toMatchObject({ given_name: 'Carol' });
    const paged = await googleContacts.list(grant, { source: 'inbox' }, 1);
    expect(paged.items.map((c) => c.id)).toEqual([carol]);
    const next = await googleContacts.list(grant, { source: 'inbox', page_token: paged.nextCursor! }, 1);
    expect(next.items.map((c) => c.id)).toEqual([dave]);
    expect((await googleContacts.list(grant, { source: 'inbox', email: 'DAVE@example.net' }, 50)).items).toHaveLength(
      1,
    );
    await expect(googleContacts.list(grant, { source: 'inbox', group: 'myContacts' }, 50)).rejects.toThrow(
      /'group' does not apply to source=inbox/,
    );
    // The address book is another list.
    expect((await googleContacts.list(grant, { email: 'carol@example.net' }, 50)).items).toEqual([]);
  });

  it('sent nothing People does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
