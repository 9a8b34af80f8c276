import type {
  CreateContactBody,
  CreateContactGroupBody,
  ListContactsQuery,
  UpdateContactBody,
  UpdateContactGroupBody,
} from '#schemas/contact';
import type { PageQuery } from '#schemas/common';
import { decodeProviderCursor, encodeProviderCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { googleClientOf, GoogleNotFoundError, GoogleRequestError, type GoogleClient } from '#shared/google/client';
import type { Contact, ContactGroup, ContactsProvider, Page } from '#shared/providers/contract';

/**
 * Provider A's contacts, live from the People API: the account's own contacts (people.connections)
 * and contact groups. A contact's ID is its resource name without `people/` (`c123…`), a group's
 * without `contactGroups/`. A change sends only the fields it names (`updatePersonFields`) with the
 * contact's etag: another client's change in between is a 409. Contacts collected from mail
 * (`source=inbox`) are Gmail's other contacts (listed only); the domain's directory is not read here: a 400.
 * `email`, `phone_number` and `group` narrow the listing's pages here (People lists no subset).
 */

export const PERSON_FIELDS = [
  'names',
  'nicknames',
  'birthdays',
  'organizations',
  'biographies',
  'photos',
  'emailAddresses',
  'phoneNumbers',
  'addresses',
  'imClients',
  'urls',
  'memberships',
  'metadata',
].join(',');
const SCOPE = 'people-contacts';
const GROUPS_SCOPE = 'people-groups';

type Typed = { type?: string; formattedType?: string };
export interface Person {
  resourceName: string;
  etag?: string;
  names?: { givenName?: string; middleName?: string; familyName?: string; honorificSuffix?: string }[];
  nicknames?: { value?: string }[];
  birthdays?: { date?: { year?: number; month?: number; day?: number } }[];
  organizations?: { name?: string; title?: string; location?: string }[];
  biographies?: { value?: string }[];
  photos?: { url?: string; default?: boolean }[];
  emailAddresses?: ({ value?: string } & Typed)[];
  phoneNumbers?: ({ value?: string } & Typed)[];
  addresses?: ({
    streetAddress?: string;
    city?: string;
    region?: string;
    postalCode?: string;
    country?: string;
  } & Typed)[];
  imClients?: { username?: string; protocol?: string }[];
  urls?: ({ value?: string } & Typed)[];
  memberships?: { contactGroupMembership?: { contactGroupResourceName?: string } }[];
  metadata?: { sources?: { updateTime?: string }[]; deleted?: boolean };
}
interface PeopleGroup {
  resourceName: string;
  etag?: string;
  name?: string;
  formattedName?: string;
  groupType?: 'GROUP_TYPE_UNSPECIFIED' | 'USER_CONTACT_GROUP' | 'SYSTEM_CONTACT_GROUP';
}

const ADDRESS_TYPES = new Set(['work', 'home', 'other']);
const PHONE_TYPES = new Set(['work', 'home', 'mobile', 'other']);
const addressType = (t: string | undefined) => (t && ADDRESS_TYPES.has(t) ? (t as 'work' | 'home' | 'other') : 'other');

const personName = (id: string) => {
  if (!/^c?\d{1,40}$/.test(id)) throw new NotFoundError(`No contact '${id}' in this grant`);
  return `people/${id}`;
};
const groupName = (id: string) => {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(id)) throw new NotFoundError(`No contact group '${id}' in this grant`);
  return `contactGroups/${id}`;
};
const idOf = (resourceName: string) => resourceName.slice(resourceName.indexOf('/') + 1);

const seconds = (iso: string | undefined) => (iso ? Math.floor(Date.parse(iso) / 1000) : undefined);
const pad = (n: number | undefined) => String(n ?? 0).padStart(2, '0');

export function contactOf(grant: GrantRecord, p: Person): Contact {
  const name = p.names?.[0];
  const org = p.organizations?.[0];
  const birthday = p.birthdays?.[0]?.date;
  const updated = seconds(p.metadata?.sources?.[0]?.updateTime);
  const photo = p.photos?.find((ph) => !ph.default)?.url;
  return {
    id: idOf(p.resourceName),
    object: 'contact',
    grant_id: grant.id,
    source: 'address_book',
    ...(name?.givenName ? { given_name: name.givenName } : {}),
    ...(name?.middleName ? { middle_name: name.middleName } : {}),
    ...(name?.familyName ? { surname: name.familyName } : {}),
    ...(name?.honorificSuffix ? { suffix: name.honorificSuffix } : {}),
    ...(p.nicknames?.[0]?.value ? { nickname: p.nicknames[0].value } : {}),
    ...(birthday?.month
      ? {
          birthday: `${birthday.year ? String(birthday.year).padStart(4, '0') : '-'}-${pad(birthday.month)}-${pad(birthday.day)}`,
        }
      : {}),
    ...(org?.name ? { company_name: org.name } : {}),
    ...(org?.title ? { job_title: org.title } : {}),
    ...(org?.location ? { office_location: org.location } : {}),
    ...(p.biographies?.[0]?.value ? { notes: p.biographies[0].value } : {}),
    ...(photo ? { picture_url: photo } : {}),
    emails: (p.emailAddresses ?? [])
      .filter((e) => e.value)
      .map((e) => ({ email: e.value!, type: addressType(e.type) })),
    phone_numbers: (p.phoneNumbers ?? [])
      .filter((n) => n.value)
      .map((n) => ({ number: n.value!, type: n.type && PHONE_TYPES.has(n.type) ? (n.type as 'mobile') : 'other' })),
    physical_addresses: (p.addresses ?? []).map((a) => ({
      type: addressType(a.type),
      ...(a.streetAddress ? { street_address: a.streetAddress } : {}),
      ...(a.city ? { city: a.city } : {}),
      ...(a.region ? { state: a.region } : {}),
      ...(a.postalCode ? { postal_code: a.postalCode } : {}),
      ...(a.country ? { country: a.country } : {}),
    })),
    im_addresses: (p.imClients ?? [])
      .filter((i) => i.username)
      .map((i) => ({ im_address: i.username!, ...(i.protocol ? { type: i.protocol } : {}) })),
    web_pages: (p.urls ?? []).filter((u) => u.value).map((u) => ({ url: u.value!, type: addressType(u.type) })),
    groups: (p.memberships ?? []).flatMap((m) => {
      const g = m.contactGroupMembership?.contactGroupResourceName;
      return g ? [{ id: idOf(g) }] : [];
    }),
    ...(updated !== undefined ? { updated_at: updated } : {}),
  };
}

/** Our fields as a People Person, with the names of the People fields they set (`updatePersonFields`). */
function personOf(body: UpdateContactBody): { person: Record<string, unknown>; fields: string[] } {
  const person: Record<string, unknown> = {};
  const fields = new Set<string>();
  const set = (field: string, value: unknown) => {
    person[field] = value;
    fields.add(field);
  };
  if (['given_name', 'middle_name', 'surname', 'suffix'].some((f) => f in body))
    set('names', [
      {
        ...(body.given_name !== undefined ? { givenName: body.given_name } : {}),
        ...(body.middle_name !== undefined ? { middleName: body.middle_name } : {}),
        ...(body.surname !== undefined ? { familyName: body.surname } : {}),
        ...(body.suffix !== undefined ? { honorificSuffix: body.suffix } : {}),
      },
    ]);
  if (body.nickname !== undefined) set('nicknames', [{ value: body.nickname }]);
  if (body.birthday !== undefined) {
    // YYYY-MM-DD, or --MM-DD without a year (the schema's pattern).
    const [, y, m, d] = /^(\d{4}|-)-(\d{2})-(\d{2})$/.exec(body.birthday)!;
    set('birthdays', [{ date: { ...(y !== '-' ? { year: Number(y) } : {}), month: Number(m), day: Number(d) } }]);
  }
  if (['company_name', 'job_title', 'office_location'].some((f) => f in body))
    set('organizations', [
      {
        ...(body.company_name !== undefined ? { name: body.company_name } : {}),
        ...(body.job_title !== undefined ? { title: body.job_title } : {}),
        ...(body.office_location !== undefined ? { location: body.office_location } : {}),
      },
    ]);
  if (body.notes !== undefined) set('biographies', [{ value: body.notes, contentType: 'TEXT_PLAIN' }]);
  if (body.emails !== undefined)
    set(
      'emailAddresses',
      body.emails.map((e) => ({ value: e.email, ...(e.type ? { type: e.type } : {}) })),
    );
  if (body.phone_numbers !== undefined)
    set(
      'phoneNumbers',
      body.phone_numbers.map((n) => ({ value: n.number, ...(n.type ? { type: n.type } : {}) })),
    );
  if (body.physical_addresses !== undefined)
    set(
      'addresses',
      body.physical_addresses.map((a) => ({
        type: a.type,
        ...(a.street_address !== undefined ? { streetAddress: a.street_address } : {}),
        ...(a.city !== undefined ? { city: a.city } : {}),
        ...(a.state !== undefined ? { region: a.state } : {}),
        ...(a.postal_code !== undefined ? { postalCode: a.postal_code } : {}),
        ...(a.country !== undefined ? { country: a.country } : {}),
      })),
    );
  if (body.im_addresses !== undefined)
    set(
      'imClients',
      body.im_addresses.map((i) => ({ username: i.im_address, ...(i.type ? { protocol: i.type } : {}) })),
    );
  if (body.web_pages !== undefined)
    set(
      'urls',
      body.web_pages.map((u) => ({ value: u.url, ...(u.type ? { type: u.type } : {}) })),
    );
  if (body.groups !== undefined)
    set(
      'memberships',
      body.groups.map((g) => ({ contactGroupMembership: { contactGroupResourceName: groupName(g.id) } })),
    );
  if (body.picture_url !== undefined)
    throw new InvalidRequestError(
      "'picture_url' cannot be set on google grants' contacts (People takes photos as uploads)",
    );
  if (body.manager_name !== undefined)
    throw new InvalidRequestError("'manager_name' is not available on google grants' contacts");
  return { person, fields: [...fields] };
}

async function getPerson(client: GoogleClient, id: string): Promise<Person> {
  try {
    return await client.call<Person>({
      api: 'people',
      path: `/v1/${personName(id)}`,
      query: { personFields: PERSON_FIELDS },
    });
  } catch (error) {
    if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No contact '${id}' in this grant`);
    throw error;
  }
}

const OTHERS_SCOPE = 'people-other-contacts';

/**
 * `source=inbox`: Gmail's "other contacts" (the people the account wrote to or heard from, which Google
 * collects itself): otherContacts.list, with the fields it can read. Their IDs are People's; they are
 * listed, not read one by one (People has no get for them), and filtered here by email and phone.
 */
async function listOtherContacts(grant: GrantRecord, query: ListContactsQuery, limit: number): Promise<Page<Contact>> {
  if (query.group !== undefined)
    throw new InvalidRequestError("'group' does not apply to source=inbox: Gmail's other contacts are in no group");
  const client = await googleClientOf(grant);
  const page = await client.call<{ otherContacts?: Person[]; nextPageToken?: string }>({
    api: 'people',
    path: '/v1/otherContacts',
    query: {
      readMask: 'names,emailAddresses,phoneNumbers,metadata',
      pageSize: limit,
      ...(query.page_token ? { pageToken: decodeProviderCursor(query.page_token, OTHERS_SCOPE) } : {}),
    },
  });
  const email = query.email?.toLowerCase();
  const phone = query.phone_number?.replace(/[^\d+]/g, '');
  return {
    items: (page.otherContacts ?? [])
      .map((p) => ({ ...contactOf(grant, p), source: 'inbox' as const }))
      .filter(
        (c) =>
          (email === undefined || c.emails.some((e) => e.email.toLowerCase() === email)) &&
          (phone === undefined || c.phone_numbers.some((n) => n.number.replace(/[^\d+]/g, '') === phone)),
      ),
    ...(page.nextPageToken ? { nextCursor: encodeProviderCursor(OTHERS_SCOPE, page.nextPageToken) } : {}),
  };
}

export const googleContacts: ContactsProvider = {
  async list(grant, query: ListContactsQuery, limit): Promise<Page<Contact>> {
    if (query.source === 'inbox') return listOtherContacts(grant, query, limit);
    if (query.source !== undefined && query.source !== 'address_book')
      throw new InvalidRequestError(
        `'source=${query.source}' is not available for google grants (address_book and inbox are)`,
      );
    if (query.recurse)
      throw new InvalidRequestError("'recurse' does not apply to google grants: their groups are not nested");
    const client = await googleClientOf(grant);
    const page = await client.call<{ connections?: Person[]; nextPageToken?: string }>({
      api: 'people',
      path: '/v1/people/me/connections',
      query: {
        personFields: PERSON_FIELDS,
        pageSize: limit,
        ...(query.page_token ? { pageToken: decodeProviderCursor(query.page_token, SCOPE) } : {}),
      },
    });
    const email = query.email?.toLowerCase();
    const phone = query.phone_number?.replace(/[^\d+]/g, '');
    const items = (page.connections ?? [])
      .map((p) => contactOf(grant, p))
      .filter(
        (c) =>
          (email === undefined || c.emails.some((e) => e.email.toLowerCase() === email)) &&
          (phone === undefined || c.phone_numbers.some((n) => n.number.replace(/[^\d+]/g, '') === phone)) &&
          (query.group === undefined || c.groups.some((g) => g.id === query.group)),
      );
    return { items, ...(page.nextPageToken ? { nextCursor: encodeProviderCursor(SCOPE, page.nextPageToken) } : {}) };
  },

  async get(grant, contactId) {
    return contactOf(grant, await getPerson(await googleClientOf(grant), contactId));
  },

  async create(grant, body: CreateContactBody) {
    const { person, fields } = personOf(body);
    if (!fields.length)
      throw new InvalidRequestError('A contact needs a name, a company, an email address or a phone number');
    const client = await googleClientOf(grant);
    const created = await client.call<Person>({
      api: 'people',
      method: 'POST',
      path: '/v1/people:createContact',
      query: { personFields: PERSON_FIELDS },
      body: person,
    });
    return contactOf(grant, created);
  },

  async update(grant, contactId, body: UpdateContactBody) {
    const client = await googleClientOf(grant);
    const current = await getPerson(client, contactId);
    const { person, fields } = personOf(body);
    try {
      const changed = await client.call<Person>({
        api: 'people',
        method: 'PATCH',
        path: `/v1/${personName(contactId)}:updateContact`,
        query: { updatePersonFields: fields.join(','), personFields: PERSON_FIELDS },
        body: { ...person, etag: current.etag },
      });
      return contactOf(grant, changed);
    } catch (error) {
      // People's answer to a stale etag: another client changed the contact since it was read.
      if (error instanceof GoogleRequestError && error.googleStatus === 'FAILED_PRECONDITION')
        throw new ConflictError(`Contact '${contactId}' was changed by another client meanwhile; read it and retry`);
      throw error;
    }
  },

  async delete(grant, contactId) {
    const client = await googleClientOf(grant);
    try {
      await client.call({ api: 'people', method: 'DELETE', path: `/v1/${personName(contactId)}:deleteContact` });
    } catch (error) {
      if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No contact '${contactId}' in this grant`);
      throw error;
    }
  },

  async listGroups(grant, query: PageQuery, limit): Promise<Page<ContactGroup>> {
    const client = await googleClientOf(grant);
    const page = await client.call<{ contactGroups?: PeopleGroup[]; nextPageToken?: string }>({
      api: 'people',
      path: '/v1/contactGroups',
      query: {
        pageSize: limit,
        ...(query.page_token ? { pageToken: decodeProviderCursor(query.page_token, GROUPS_SCOPE) } : {}),
      },
    });
    return {
      items: (page.contactGroups ?? []).map((g) => groupOf(grant, g)),
      ...(page.nextPageToken ? { nextCursor: encodeProviderCursor(GROUPS_SCOPE, page.nextPageToken) } : {}),
    };
  },

  async createGroup(grant, body: CreateContactGroupBody) {
    if (body.parent_id !== undefined)
      throw new InvalidRequestError("Google's contact groups are not nested: 'parent_id' does not apply");
    const client = await googleClientOf(grant);
    const created = await client.call<PeopleGroup>({
      api: 'people',
      method: 'POST',
      path: '/v1/contactGroups',
      body: { contactGroup: { name: body.name } },
    });
    return groupOf(grant, created);
  },

  async updateGroup(grant, groupId, body: UpdateContactGroupBody) {
    const client = await googleClientOf(grant);
    const current = await client
      .call<PeopleGroup>({ api: 'people', path: `/v1/${groupName(groupId)}` })
      .catch((error: unknown) => {
        if (error instanceof GoogleNotFoundError)
          throw new NotFoundError(`No contact group '${groupId}' in this grant`);
        throw error;
      });
    if (current.groupType === 'SYSTEM_CONTACT_GROUP')
      throw new InvalidRequestError(`'${groupId}' is a system group: it cannot be renamed`);
    const changed = await client.call<PeopleGroup>({
      api: 'people',
      method: 'PUT',
      path: `/v1/${groupName(groupId)}`,
      body: { contactGroup: { name: body.name, etag: current.etag } },
    });
    return groupOf(grant, changed);
  },

  async deleteGroup(grant, groupId) {
    const client = await googleClientOf(grant);
    try {
      await client.call({ api: 'people', method: 'DELETE', path: `/v1/${groupName(groupId)}` });
    } catch (error) {
      if (error instanceof GoogleNotFoundError) throw new NotFoundError(`No contact group '${groupId}' in this grant`);
      throw error;
    }
  },
};

function groupOf(grant: GrantRecord, g: PeopleGroup): ContactGroup {
  const name = g.formattedName ?? g.name ?? idOf(g.resourceName);
  return {
    id: idOf(g.resourceName),
    object: 'contact_group',
    grant_id: grant.id,
    name,
    group_type: g.groupType === 'SYSTEM_CONTACT_GROUP' ? 'system' : 'user',
    path: name,
  };
}
