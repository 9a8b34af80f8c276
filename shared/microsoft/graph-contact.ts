import type { UpdateContactBody } from '#schemas/contact';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import type { Contact } from '#shared/providers/contract';

/**
 * Provider B's contacts in our shape and back: an Outlook contact (Graph's `microsoft.graph.contact`)
 * as a ContactObject, and our fields as the Graph properties that hold them. Outlook's contact has
 * fixed slots, not typed lists: up to 3 email addresses (no type), 2 business and 2 home phones and
 * one mobile, one business, home and other address, 3 IM addresses (no type) and one web page (the
 * business home page). What does not fit a slot is a 400 naming it, before Graph is called; types
 * Outlook does not keep (of emails and IM addresses) are not kept. A contact's group is the contact
 * folder it is in (the default Contacts folder is no group), set by where it is created.
 */

type Nullable<T> = T | null | undefined;

export interface GraphPhysicalAddress {
  street?: Nullable<string>;
  city?: Nullable<string>;
  state?: Nullable<string>;
  countryOrRegion?: Nullable<string>;
  postalCode?: Nullable<string>;
}

export interface GraphContact {
  id: string;
  parentFolderId?: Nullable<string>;
  changeKey?: Nullable<string>;
  createdDateTime?: Nullable<string>;
  lastModifiedDateTime?: Nullable<string>;
  givenName?: Nullable<string>;
  middleName?: Nullable<string>;
  surname?: Nullable<string>;
  generation?: Nullable<string>;
  nickName?: Nullable<string>;
  birthday?: Nullable<string>;
  companyName?: Nullable<string>;
  jobTitle?: Nullable<string>;
  manager?: Nullable<string>;
  officeLocation?: Nullable<string>;
  personalNotes?: Nullable<string>;
  emailAddresses?: Nullable<{ name?: Nullable<string>; address?: Nullable<string> }[]>;
  businessPhones?: Nullable<Nullable<string>[]>;
  homePhones?: Nullable<Nullable<string>[]>;
  mobilePhone?: Nullable<string>;
  businessAddress?: Nullable<GraphPhysicalAddress>;
  homeAddress?: Nullable<GraphPhysicalAddress>;
  otherAddress?: Nullable<GraphPhysicalAddress>;
  imAddresses?: Nullable<Nullable<string>[]>;
  businessHomePage?: Nullable<string>;
}

/** What a contact is read with: the properties our object is made of, and no more. */
export const GRAPH_CONTACT_SELECT = [
  'id',
  'parentFolderId',
  'changeKey',
  'createdDateTime',
  'lastModifiedDateTime',
  'givenName',
  'middleName',
  'surname',
  'generation',
  'nickName',
  'birthday',
  'companyName',
  'jobTitle',
  'manager',
  'officeLocation',
  'personalNotes',
  'emailAddresses',
  'businessPhones',
  'homePhones',
  'mobilePhone',
  'businessAddress',
  'homeAddress',
  'otherAddress',
  'imAddresses',
  'businessHomePage',
] as const;

/** Outlook's slots: how many values each holds. */
const MAX_EMAILS = 3;
const MAX_PHONES = { work: 2, home: 2, mobile: 1 } as const;
const MAX_IMS = 3;

const ADDRESS_SLOTS = { work: 'businessAddress', home: 'homeAddress', other: 'otherAddress' } as const;
/** The published pattern of a contact's email: Outlook also keeps Exchange's X.500 names there, which are not addresses. */
const EMAIL = /^[^@\s]+@[^@\s]+$/;

const seconds = (iso: Nullable<string>) => {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
};
const text = (v: Nullable<string>) => (v ? v : undefined);
const values = (list: Nullable<Nullable<string>[]>) => (list ?? []).filter((v): v is string => !!v);

function addressOf(type: 'work' | 'home' | 'other', a: Nullable<GraphPhysicalAddress>) {
  if (!a || ![a.street, a.city, a.state, a.postalCode, a.countryOrRegion].some(Boolean)) return [];
  return [
    {
      type,
      ...(a.street ? { street_address: a.street } : {}),
      ...(a.city ? { city: a.city } : {}),
      ...(a.state ? { state: a.state } : {}),
      ...(a.postalCode ? { postal_code: a.postalCode } : {}),
      ...(a.countryOrRegion ? { country: a.countryOrRegion } : {}),
    },
  ];
}

/** An Outlook contact as ours; `group` is the contact folder it is in, unless that is the default one. */
export function contactFromGraph(grant: GrantRecord, c: GraphContact, group: string | undefined): Contact {
  const birthday = c.birthday && /^\d{4}-\d{2}-\d{2}/.exec(new Date(Date.parse(c.birthday)).toISOString())?.[0];
  const created = seconds(c.createdDateTime);
  const updated = seconds(c.lastModifiedDateTime);
  const fields = {
    given_name: text(c.givenName),
    middle_name: text(c.middleName),
    surname: text(c.surname),
    suffix: text(c.generation),
    nickname: text(c.nickName),
    birthday: birthday || undefined,
    company_name: text(c.companyName),
    job_title: text(c.jobTitle),
    manager_name: text(c.manager),
    office_location: text(c.officeLocation),
    notes: text(c.personalNotes),
  };
  return {
    id: c.id,
    object: 'contact',
    grant_id: grant.id,
    source: 'address_book',
    ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)),
    emails: (c.emailAddresses ?? []).flatMap((e) => (e.address && EMAIL.test(e.address) ? [{ email: e.address }] : [])),
    phone_numbers: [
      ...values(c.businessPhones).map((number) => ({ number, type: 'work' as const })),
      ...values(c.homePhones).map((number) => ({ number, type: 'home' as const })),
      ...(c.mobilePhone ? [{ number: c.mobilePhone, type: 'mobile' as const }] : []),
    ],
    physical_addresses: [
      ...addressOf('work', c.businessAddress),
      ...addressOf('home', c.homeAddress),
      ...addressOf('other', c.otherAddress),
    ],
    im_addresses: values(c.imAddresses).map((im_address) => ({ im_address })),
    web_pages: c.businessHomePage ? [{ url: c.businessHomePage, type: 'work' as const }] : [],
    groups: group ? [{ id: group }] : [],
    ...(created !== undefined ? { created_at: created } : {}),
    ...(updated !== undefined ? { updated_at: updated } : {}),
  };
}

const refuse = (message: string) => new InvalidRequestError(message);

/**
 * Our fields as the Graph properties that hold them: a list sent replaces its slots whole (the slots
 * it leaves empty are cleared), a field left out is not sent. `groups` and `picture_url` are the
 * caller's (a group is where a contact is created; Outlook takes photos as uploads).
 */
export function graphContactOf(body: UpdateContactBody): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const set = (property: string, value: unknown) => {
    if (value !== undefined) out[property] = value;
  };
  set('givenName', body.given_name);
  set('middleName', body.middle_name);
  set('surname', body.surname);
  set('generation', body.suffix);
  set('nickName', body.nickname);
  set('companyName', body.company_name);
  set('jobTitle', body.job_title);
  set('manager', body.manager_name);
  set('officeLocation', body.office_location);
  set('personalNotes', body.notes);
  if (body.birthday !== undefined) {
    if (body.birthday.startsWith('--'))
      throw refuse(`'birthday' needs a year on microsoft grants ('${body.birthday}'): Outlook keeps a whole date`);
    out.birthday = `${body.birthday}T00:00:00Z`;
  }
  if (body.emails !== undefined) {
    if (body.emails.length > MAX_EMAILS)
      throw refuse(`A microsoft grant's contact has at most ${MAX_EMAILS} email addresses`);
    out.emailAddresses = body.emails.map((e) => ({ address: e.email, name: e.email }));
  }
  if (body.phone_numbers !== undefined) {
    const slots = { work: [] as string[], home: [] as string[], mobile: [] as string[] };
    for (const phone of body.phone_numbers) {
      if (phone.type === 'other')
        throw refuse(
          `Phone number '${phone.number}' has type 'other': a microsoft grant's contact has work, home and mobile numbers`,
        );
      slots[phone.type ?? 'work'].push(phone.number);
    }
    for (const type of ['work', 'home', 'mobile'] as const)
      if (slots[type].length > MAX_PHONES[type])
        throw refuse(`A microsoft grant's contact has at most ${MAX_PHONES[type]} ${type} phone number(s)`);
    out.businessPhones = slots.work;
    out.homePhones = slots.home;
    out.mobilePhone = slots.mobile[0] ?? null;
  }
  if (body.physical_addresses !== undefined) {
    const empty = { street: null, city: null, state: null, postalCode: null, countryOrRegion: null };
    for (const slot of Object.values(ADDRESS_SLOTS)) out[slot] = empty;
    const seen = new Set<string>();
    for (const a of body.physical_addresses) {
      if (seen.has(a.type))
        throw refuse(`A microsoft grant's contact has one address of each type ('${a.type}' twice)`);
      seen.add(a.type);
      out[ADDRESS_SLOTS[a.type]] = {
        ...empty,
        ...(a.street_address !== undefined ? { street: a.street_address } : {}),
        ...(a.city !== undefined ? { city: a.city } : {}),
        ...(a.state !== undefined ? { state: a.state } : {}),
        ...(a.postal_code !== undefined ? { postalCode: a.postal_code } : {}),
        ...(a.country !== undefined ? { countryOrRegion: a.country } : {}),
      };
    }
  }
  if (body.im_addresses !== undefined) {
    if (body.im_addresses.length > MAX_IMS)
      throw refuse(`A microsoft grant's contact has at most ${MAX_IMS} IM addresses`);
    out.imAddresses = body.im_addresses.map((i) => i.im_address);
  }
  if (body.web_pages !== undefined) {
    const [page, ...more] = body.web_pages;
    if (more.length || (page?.type !== undefined && page.type !== 'work'))
      throw refuse("A microsoft grant's contact has one web page, its business home page (type 'work')");
    out.businessHomePage = page?.url ?? null;
  }
  if (body.picture_url !== undefined)
    throw new InvalidRequestError(
      "'picture_url' cannot be set on microsoft grants' contacts (Outlook takes photos as uploads)",
    );
  return out;
}
