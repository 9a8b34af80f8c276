import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { ContactGroupObject, ContactObject } from '#schemas/contact';
import { graphContacts } from '#shared/microsoft/contacts';
import { encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import type { Contact, ContactGroup } from '#shared/providers/contract';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Provider B's contacts, live (shared/microsoft/contacts.ts), against the local Graph fake: the
 * address book read folder by folder (the default Contacts folder, then each contact folder, our
 * groups), filters as Graph's `$filter` or narrowed here, page tokens bound to the grant's mailbox,
 * create/get/update/delete with Outlook's slots, contact folders as groups; every request and answer
 * checked by the fake against Graph's descriptions, and every answer of ours against our schemas.
 */
let fake: GraphFake;
let grant: GrantRecord;
let other: GrantRecord;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validContact = ajv.compile(ContactObject);
const validGroup = ajv.compile(ContactGroupObject);

/** Responses are schemas too: each contact and group answered is one as published. */
function published<T extends Contact | ContactGroup>(value: T): T {
  const valid = value.object === 'contact' ? validContact : validGroup;
  expect(valid(value), JSON.stringify(valid.errors)).toBe(true);
  return value;
}
const all = <T extends Contact | ContactGroup>(page: { items: T[] }) => page.items.map(published);

beforeAll(async () => {
  fake = await startGraphFake();
  ({ grant } = await connectFakeMicrosoftGrant(fake, 'microsoft live contacts'));
  ({ grant: other } = await connectFakeMicrosoftGrant(fake, 'microsoft live contacts, another grant'));
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

describe("provider B's contacts, live", () => {
  let friends: ContactGroup;
  let ann: Contact;
  let bob: Contact;

  it('creates contacts in the default folder and in a group, with every slot Outlook keeps', async () => {
    friends = published(await graphContacts.createGroup(grant, { name: 'Friends' }));
    expect(friends).toMatchObject({ object: 'contact_group', name: 'Friends', group_type: 'user', path: 'Friends' });
    ann = published(
      await graphContacts.create(grant, {
        given_name: 'Ann',
        middle_name: 'B.',
        surname: 'Lee',
        suffix: 'Jr.',
        nickname: 'Annie',
        birthday: '1990-04-12',
        company_name: 'Acme',
        job_title: 'Buyer',
        manager_name: 'Carl',
        office_location: 'Floor 2',
        notes: 'Prefers mail',
        emails: [{ email: 'ann@acme.example', type: 'work' }, { email: 'ann@home.example' }],
        phone_numbers: [
          { number: '+1 555 0100', type: 'mobile' },
          { number: '+1 555 0101', type: 'work' },
          { number: '+1 555 0102', type: 'home' },
        ],
        physical_addresses: [
          { type: 'work', street_address: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
          { type: 'home', city: 'Shelbyville', state: 'IL' },
        ],
        im_addresses: [{ im_address: 'ann@im.example', type: 'xmpp' }],
        web_pages: [{ url: 'https://acme.example', type: 'work' }],
        groups: [{ id: friends.id }],
      }),
    );
    expect(ann).toMatchObject({
      object: 'contact',
      grant_id: grant.id,
      source: 'address_book',
      given_name: 'Ann',
      middle_name: 'B.',
      surname: 'Lee',
      suffix: 'Jr.',
      nickname: 'Annie',
      birthday: '1990-04-12',
      company_name: 'Acme',
      job_title: 'Buyer',
      manager_name: 'Carl',
      office_location: 'Floor 2',
      notes: 'Prefers mail',
      // Outlook's addresses and IM addresses have no type.
      emails: [{ email: 'ann@acme.example' }, { email: 'ann@home.example' }],
      phone_numbers: [
        { number: '+1 555 0101', type: 'work' },
        { number: '+1 555 0102', type: 'home' },
        { number: '+1 555 0100', type: 'mobile' },
      ],
      physical_addresses: [
        { type: 'work', street_address: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
        { type: 'home', city: 'Shelbyville', state: 'IL' },
      ],
      im_addresses: [{ im_address: 'ann@im.example' }],
      web_pages: [{ url: 'https://acme.example', type: 'work' }],
      groups: [{ id: friends.id }],
    });
    expect(ann.created_at).toEqual(expect.any(Number));
    bob = published(await graphContacts.create(grant, { given_name: 'Bob', emails: [{ email: 'bob@example.org' }] }));
    expect(bob.groups).toEqual([]);
    expect(published(await graphContacts.get(grant, ann.id, {}))).toEqual(ann);
    expect(published(await graphContacts.get(grant, bob.id, {}))).toEqual(bob);
  });

  it('refuses what Outlook has no slot for, before calling Graph', async () => {
    const before = fake.requests().length;
    const refused = [
      { given_name: 'X', birthday: '--04-12' },
      { given_name: 'X', phone_numbers: [{ number: '1', type: 'other' as const }] },
      {
        given_name: 'X',
        phone_numbers: [
          { number: '1', type: 'mobile' as const },
          { number: '2', type: 'mobile' as const },
        ],
      },
      { given_name: 'X', emails: ['a', 'b', 'c', 'd'].map((n) => ({ email: `${n}@example.org` })) },
      { given_name: 'X', physical_addresses: [{ type: 'home' as const }, { type: 'home' as const }] },
      { given_name: 'X', web_pages: [{ url: 'https://a.example', type: 'home' as const }] },
      { given_name: 'X', picture_url: 'https://a.example/p.png' },
      { given_name: 'X', groups: [{ id: friends.id }, { id: 'AAMkADother' }] },
      { notes: 'no name, company, email or phone' },
    ];
    for (const body of refused)
      await expect(graphContacts.create(grant, body), JSON.stringify(body)).rejects.toThrow(InvalidRequestError);
    expect(fake.requests().length).toBe(before);
  });

  it('lists the default folder, then each group; filters by email through Graph and by phone here', async () => {
    expect(all(await graphContacts.list(grant, {}, 50)).map((c) => c.given_name)).toEqual(['Bob', 'Ann']);
    expect(all(await graphContacts.list(grant, { email: 'ANN@acme.example' }, 50)).map((c) => c.id)).toEqual([ann.id]);
    expect(
      fake
        .requests()
        .some((r) =>
          decodeURIComponent(r.path).includes("$filter=emailAddresses/any(a:a/address eq 'ANN@acme.example')"),
        ),
    ).toBe(true);
    expect(all(await graphContacts.list(grant, { phone_number: '+15550102' }, 50)).map((c) => c.id)).toEqual([ann.id]);
    expect(all(await graphContacts.list(grant, { group: friends.id }, 50)).map((c) => c.id)).toEqual([ann.id]);
    expect(all(await graphContacts.list(grant, { source: 'address_book', email: 'bob@example.org' }, 50))).toHaveLength(
      1,
    );
    await expect(graphContacts.list(grant, { group: 'AAMkADnoSuchFolder' }, 50)).rejects.toThrow(NotFoundError);
  });

  it('answers a 400 naming each filter Graph cannot answer', async () => {
    await expect(graphContacts.list(grant, { source: 'inbox' }, 50)).rejects.toThrow(/source=inbox/);
    await expect(graphContacts.list(grant, { source: 'domain' }, 50)).rejects.toThrow(/source=domain/);
    await expect(graphContacts.list(grant, { group: friends.id, recurse: true }, 50)).rejects.toThrow(/'recurse'/);
  });

  it('pages through every folder with tokens that continue only this grant’s listings', async () => {
    const carol = await graphContacts.create(grant, { given_name: 'Carol', groups: [{ id: friends.id }] });
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await graphContacts.list(grant, token ? { page_token: token } : {}, 1);
      expect(page.items.length).toBeLessThanOrEqual(1);
      seen.push(...all(page).map((c) => c.id));
      token = page.nextCursor;
      pages++;
    } while (token && pages < 10);
    expect(seen.sort()).toEqual([ann.id, bob.id, carol.id].sort());

    const first = await graphContacts.list(grant, {}, 1);
    // The same token given to another grant, or a token naming a link outside the contacts: refused.
    await expect(graphContacts.list(other, { page_token: first.nextCursor! }, 1)).rejects.toThrow(InvalidRequestError);
    const forged = encodeProviderCursor(
      `graph-contacts:${grant.id}`,
      JSON.stringify({ folder: '', link: `${fake.url}/v1.0/me/messages?$top=1`, rest: [] }),
    );
    await expect(graphContacts.list(grant, { page_token: forged }, 1)).rejects.toThrow(InvalidRequestError);
    await expect(graphContacts.list(grant, { page_token: 'not a token' }, 1)).rejects.toThrow(InvalidRequestError);
    await graphContacts.delete(grant, carol.id);
  });

  it('changes a contact: lists replace their slots whole, fields left out are kept; its group stays', async () => {
    const changed = published(
      await graphContacts.update(grant, ann.id, {
        job_title: 'Head buyer',
        emails: [],
        phone_numbers: [{ number: '+1 555 0199' }],
        physical_addresses: [{ type: 'other', city: 'Capital City' }],
        groups: [{ id: friends.id }],
      }),
    );
    expect(changed).toMatchObject({
      id: ann.id,
      given_name: 'Ann',
      job_title: 'Head buyer',
      company_name: 'Acme',
      emails: [],
      phone_numbers: [{ number: '+1 555 0199', type: 'work' }],
      physical_addresses: [{ type: 'other', city: 'Capital City' }],
      groups: [{ id: friends.id }],
    });
    expect(published(await graphContacts.get(grant, ann.id, {}))).toEqual(changed);
    await expect(graphContacts.update(grant, ann.id, { groups: [] })).rejects.toThrow(/cannot move a contact/);
    await expect(graphContacts.update(grant, bob.id, { groups: [{ id: friends.id }] })).rejects.toThrow(
      InvalidRequestError,
    );
    await expect(graphContacts.update(grant, 'AAMkADnoSuchContact', { given_name: 'X' })).rejects.toThrow(
      NotFoundError,
    );
  });

  it('retries a listing Graph throttled, after its Retry-After', async () => {
    fake.inject({ path: /\/me\/contacts$/, method: 'GET', status: 429, retryAfter: 1 });
    const before = fake.requests().filter((r) => r.status === 429).length;
    expect(all(await graphContacts.list(grant, { email: 'bob@example.org' }, 50)).map((c) => c.id)).toEqual([bob.id]);
    expect(fake.requests().filter((r) => r.status === 429).length).toBe(before + 1);
  });

  it('lists, renames and deletes groups (contact folders), paging with tokens of its own', async () => {
    const work = published(await graphContacts.createGroup(grant, { name: 'Work' }));
    await expect(graphContacts.createGroup(grant, { name: 'Sub', parent_id: work.id })).rejects.toThrow(/parent_id/);
    const first = await graphContacts.listGroups(grant, {}, 1);
    expect(all(first)).toHaveLength(1);
    const second = await graphContacts.listGroups(grant, { page_token: first.nextCursor! }, 1);
    expect([...all(first), ...all(second)].map((g) => g.name).sort()).toEqual(['Friends', 'Work']);
    await expect(graphContacts.listGroups(other, { page_token: first.nextCursor! }, 1)).rejects.toThrow(
      InvalidRequestError,
    );

    const renamed = published(await graphContacts.updateGroup(grant, work.id, { name: 'Colleagues' }));
    expect(renamed).toMatchObject({ id: work.id, name: 'Colleagues', path: 'Colleagues' });
    await expect(graphContacts.updateGroup(grant, 'AAMkADnoSuchFolder', { name: 'X' })).rejects.toThrow(NotFoundError);

    // Outlook would delete Friends' contacts with it; our contract keeps them: refused while it holds any.
    await expect(graphContacts.deleteGroup(grant, friends.id)).rejects.toThrow(/still holds contacts/);
    await graphContacts.deleteGroup(grant, work.id);
    expect(all(await graphContacts.listGroups(grant, {}, 50)).map((g) => g.id)).toEqual([friends.id]);
    await expect(graphContacts.deleteGroup(grant, work.id)).rejects.toThrow(NotFoundError);
  });

  it('deletes a contact; reading or deleting it again is a 404', async () => {
    await graphContacts.delete(grant, bob.id);
    await expect(graphContacts.get(grant, bob.id, {})).rejects.toThrow(NotFoundError);
    await expect(graphContacts.delete(grant, bob.id)).rejects.toThrow(NotFoundError);
    await expect(graphContacts.get(grant, '../messages', {})).rejects.toThrow(NotFoundError);
    expect(all(await graphContacts.list(grant, {}, 50)).map((c) => c.id)).toEqual([ann.id]);
  });

  it('reads the mailbox of an admin-consent grant at /users/{id}', async () => {
    const { grant: admin, userId } = await connectFakeMicrosoftGrant(fake, 'microsoft contacts, admin consent', {
      settings: { credential_type: 'adminconsent' },
    });
    const made = published(await graphContacts.create(admin, { given_name: 'Dora' }));
    expect(all(await graphContacts.list(admin, {}, 50)).map((c) => c.id)).toEqual([made.id]);
    expect(fake.requests().some((r) => r.path.startsWith(`/v1.0/users/${userId}/contacts`))).toBe(true);
  });
});
