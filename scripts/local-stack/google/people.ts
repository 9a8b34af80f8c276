import { createHash } from 'node:crypto';
import type { DiscoveryMethod } from './discovery';
import { GoogleApiError, notFound } from './errors';

/**
 * The state and the handlers of the local People API fake: each user's contacts (`people/c<digits>`)
 * with the person fields a contact source keeps, contact groups (the system ones and the user's) and
 * membership, etags that guard updates, and the change log that sync tokens read (deleted contacts
 * come back with `metadata.deleted`). Names and shapes follow people-v1.json; the server checks every
 * request and answer against it, so a handler here only has to be right about behaviour.
 */

// ---------------------------------------------------------------------------------------------------
// Errors: People is a newer API, its errors carry a google.rpc status and sometimes an ErrorInfo
// ---------------------------------------------------------------------------------------------------

export interface ErrorInfo {
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo';
  reason: string;
  domain: string;
}

/** A People error whose google.rpc status is not the one its HTTP code maps to (400 FAILED_PRECONDITION). */
export class PeopleError extends GoogleApiError {
  override readonly status: string;
  readonly details?: ErrorInfo[];

  constructor(code: number, status: string, message: string, reason: string, details?: ErrorInfo[]) {
    super(code, message, reason);
    this.status = status;
    if (details) this.details = details;
  }
}

const invalid = (message: string) => new GoogleApiError(400, message, 'badRequest');
const precondition = (message: string) => new PeopleError(400, 'FAILED_PRECONDITION', message, 'failedPrecondition');

/** people-v1.json: "a request with an expired sync token will get an error with ... reason EXPIRED_SYNC_TOKEN". */
const expiredSyncToken = () =>
  new PeopleError(
    400,
    'FAILED_PRECONDITION',
    'Sync token is expired. Clear local cache and retry call without the sync token.',
    'failedPrecondition',
    [
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'EXPIRED_SYNC_TOKEN',
        domain: 'people.googleapis.com',
      },
    ],
  );

const DOCS = 'Valid paths are documented at https://developers.google.com/people/api/rest/v1/people/get.';
/** "Sync tokens expire 7 days after the full sync." (people.connections.list) */
const SYNC_TOKEN_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

// ---------------------------------------------------------------------------------------------------
// Person fields
// ---------------------------------------------------------------------------------------------------

/** What personFields may name (people.get's description). */
const PERSON_FIELDS = [
  'addresses',
  'ageRanges',
  'biographies',
  'birthdays',
  'calendarUrls',
  'clientData',
  'coverPhotos',
  'emailAddresses',
  'events',
  'externalIds',
  'genders',
  'imClients',
  'interests',
  'locales',
  'locations',
  'memberships',
  'metadata',
  'miscKeywords',
  'names',
  'nicknames',
  'occupations',
  'organizations',
  'phoneNumbers',
  'photos',
  'relations',
  'sipAddresses',
  'skills',
  'urls',
  'userDefined',
] as const;
type PersonField = (typeof PERSON_FIELDS)[number];

/** What updatePersonFields may name (updateContact's description): a contact source's own fields. */
const UPDATABLE: readonly PersonField[] = [
  'addresses',
  'biographies',
  'birthdays',
  'calendarUrls',
  'clientData',
  'emailAddresses',
  'events',
  'externalIds',
  'genders',
  'imClients',
  'interests',
  'locales',
  'locations',
  'memberships',
  'miscKeywords',
  'names',
  'nicknames',
  'occupations',
  'organizations',
  'phoneNumbers',
  'relations',
  'sipAddresses',
  'urls',
  'userDefined',
];

/** "400 if more than one field is specified on a field that is a singleton for contact sources". */
const SINGLETONS: readonly PersonField[] = ['biographies', 'birthdays', 'genders', 'names'];

/** Fields whose items have a formattedType the server writes from their type. */
const WITH_FORMATTED_TYPE = new Set<string>([
  'addresses',
  'calendarUrls',
  'emailAddresses',
  'events',
  'externalIds',
  'imClients',
  'miscKeywords',
  'organizations',
  'phoneNumbers',
  'relations',
  'sipAddresses',
  'urls',
]);

const FORMATTED_TYPES: Record<string, string> = {
  home: 'Home',
  work: 'Work',
  other: 'Other',
  mobile: 'Mobile',
  homeFax: 'Home Fax',
  workFax: 'Work Fax',
  otherFax: 'Other Fax',
  pager: 'Pager',
  workMobile: 'Work Mobile',
  workPager: 'Work Pager',
  main: 'Main',
  googleVoice: 'Google Voice',
  homePage: 'Home Page',
  blog: 'Blog',
  profile: 'Profile',
  anniversary: 'Anniversary',
};

/** Output-only parts of an item: what the client sends there is dropped and written by the server. */
const READ_ONLY_ITEM_KEYS = new Set(['displayName', 'displayNameLastFirst', 'formattedType', 'canonicalForm']);

type FieldItem = Record<string, unknown>;

interface FieldMetadata {
  primary?: boolean;
  sourcePrimary?: boolean;
  verified?: boolean;
  source?: { type: string; id: string };
}

/** A Person as the API answers it. */
export interface PersonResource {
  resourceName: string;
  etag: string;
  metadata?: {
    sources: { type: string; id: string; etag?: string; updateTime?: string }[];
    objectType?: 'PERSON';
    deleted?: boolean;
  };
  [field: string]: unknown;
}

// ---------------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------------

interface StoredContact {
  /** `c` and digits: the resource name is `people/<id>`. */
  id: string;
  fields: Partial<Record<PersonField, FieldItem[]>>;
  /** Contact group ids, in the order the contact joined them. */
  groups: string[];
  version: number;
  updated: number;
  /** The book's change counter when this contact last changed: what sync tokens compare. */
  seq: number;
  deleted: boolean;
}

interface StoredGroup {
  id: string;
  name: string;
  system: boolean;
  clientData?: { key?: string; value?: string }[];
  version: number;
  updated: number;
  seq: number;
  deleted: boolean;
}

/** System groups (ids and formatted names as Google answers them); only the first two take new members. */
const SYSTEM_GROUPS: [string, string][] = [
  ['myContacts', 'My Contacts'],
  ['starred', 'Starred'],
  ['friends', 'Friends'],
  ['family', 'Family'],
  ['coworkers', 'Coworkers'],
  ['chatBuddies', 'Chat contacts'],
];
const OPEN_SYSTEM_GROUPS = new Set(['myContacts', 'starred']);

export class ContactBook {
  readonly email: string;
  /** The user's own account id: `people/me` is `people/<accountId>`. */
  readonly accountId: string;
  readonly contacts = new Map<string, StoredContact>();
  readonly groups = new Map<string, StoredGroup>();
  /** "Other contacts": the people the account wrote to or heard from, Gmail's own (otherContacts.list). */
  readonly others = new Map<string, { resourceName: string; name?: string; email: string; updated: number }>();
  /** Moves on with every change of a contact or a group. */
  seq = 0;
  /** Sync tokens older than this are expired. */
  floor = 0;

  constructor(email: string, now: number) {
    this.email = email;
    const digest = createHash('sha256').update(email).digest();
    this.accountId = `1${(digest.readBigUInt64BE(0) % 10n ** 20n).toString().padStart(20, '0')}`;
    // A system group's name is its id (`myContacts`); formattedName is the readable one.
    for (const [id] of SYSTEM_GROUPS)
      this.groups.set(id, { id, name: id, system: true, version: 1, updated: now, seq: 0, deleted: false });
  }

  liveContact(resourceName: string): StoredContact {
    const id = /^people\/(c\d+)$/.exec(resourceName)?.[1];
    const contact = id ? this.contacts.get(id) : undefined;
    if (!contact || contact.deleted) throw notFound();
    return contact;
  }

  liveGroup(resourceName: string): StoredGroup {
    const id = /^contactGroups\/([^/]+)$/.exec(resourceName)?.[1];
    const group = id ? this.groups.get(id) : undefined;
    if (!group || group.deleted) throw notFound();
    return group;
  }

  members(group: StoredGroup): StoredContact[] {
    return [...this.contacts.values()].filter((c) => !c.deleted && c.groups.includes(group.id));
  }

  /** Records a change of a contact or group, for sync tokens and etags. */
  touch(item: StoredContact | StoredGroup, now: number): void {
    item.seq = ++this.seq;
    item.version++;
    item.updated = now;
  }
}

export interface PeopleEnvironment {
  now: () => number;
}

export class PeopleState {
  readonly env: PeopleEnvironment;
  private readonly books = new Map<string, ContactBook>();
  private counter = 0;

  constructor(env: PeopleEnvironment) {
    this.env = env;
  }

  get now(): number {
    return this.env.now();
  }

  addUser(email: string): void {
    const key = email.toLowerCase();
    if (!this.books.has(key)) this.books.set(key, new ContactBook(key, this.now));
  }

  book(email: string): ContactBook | undefined {
    return this.books.get(email.toLowerCase());
  }

  /** The book of a test-only helper's `email`, or a plain error naming it. */
  requiredBook(email: string): ContactBook {
    const book = this.book(email);
    if (!book) throw new Error(`The Google fake has no user ${email}; addUser first`);
    return book;
  }

  /** Contact ids like Google's: `c` and 19 digits, growing with time. */
  newContactId(): string {
    return `c${((BigInt(this.now) << 20n) | BigInt(this.counter++ & 0xfffff)).toString()}`;
  }

  /** Contact group ids like Google's user groups: hex digits. */
  newGroupId(): string {
    return ((BigInt(this.now) << 12n) | BigInt(this.counter++ & 0xfff)).toString(16);
  }

  reset(): void {
    this.books.clear();
  }
}

// ---------------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------------

const iso = (ms: number) => new Date(ms).toISOString();
const b64 = (text: string) => Buffer.from(text).toString('base64url');

/** The contact source's id: the hex form of the contact's number, as Google gives it. */
const sourceIdOf = (c: StoredContact) => BigInt(c.id.slice(1)).toString(16);
const personEtag = (c: StoredContact) => `%E${b64(`person ${c.id} ${c.version}`)}`;
const sourceEtag = (c: StoredContact) => `#${b64(`source ${c.id} ${c.version}`)}`;
const groupEtag = (g: StoredGroup) => b64(`group ${g.id} ${g.version}`);

function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function nameParts(item: FieldItem): { display?: string; lastFirst?: string } {
  const s = (k: string) => (typeof item[k] === 'string' && item[k] ? (item[k] as string) : undefined);
  const display =
    [s('honorificPrefix'), s('givenName'), s('middleName'), s('familyName'), s('honorificSuffix')]
      .filter(Boolean)
      .join(' ') || s('unstructuredName');
  const given = [s('honorificPrefix'), s('givenName'), s('middleName')].filter(Boolean).join(' ');
  const family = s('familyName');
  const lastFirst = family
    ? [family + (given ? ',' : ''), given, s('honorificSuffix')].filter(Boolean).join(' ')
    : display;
  return { display, lastFirst };
}

/** One item of a person field as answered: the source's metadata and what the server formats. */
function renderItem(field: string, item: FieldItem, primary: boolean, source: FieldMetadata['source']): FieldItem {
  const sent = (item.metadata ?? {}) as FieldMetadata;
  const out: FieldItem = {
    metadata: compact({ primary: primary || undefined, sourcePrimary: sent.sourcePrimary, source }),
    ...Object.fromEntries(Object.entries(item).filter(([k]) => k !== 'metadata')),
  };
  if (field === 'names') {
    const { display, lastFirst } = nameParts(item);
    Object.assign(out, compact({ displayName: display, displayNameLastFirst: lastFirst }));
    if (!out.unstructuredName && display) out.unstructuredName = display;
  }
  if (WITH_FORMATTED_TYPE.has(field) && typeof item.type === 'string' && item.type)
    out.formattedType = FORMATTED_TYPES[item.type] ?? item.type;
  if (field === 'phoneNumbers' && typeof item.value === 'string' && item.value.trim().startsWith('+'))
    out.canonicalForm = `+${item.value.replace(/\D/g, '')}`;
  if (field === 'addresses' && !item.formattedValue) {
    const s = (k: string) => (typeof item[k] === 'string' ? (item[k] as string) : '');
    const locality = [s('city'), [s('region'), s('postalCode')].filter(Boolean).join(' ')].filter(Boolean).join(', ');
    const lines = [s('poBox'), s('streetAddress'), s('extendedAddress'), locality, s('country')].filter(Boolean);
    if (lines.length) out.formattedValue = lines.join('\n');
  }
  if (field === 'biographies') out.contentType ??= 'TEXT_PLAIN';
  return out;
}

function renderContact(c: StoredContact, mask: ReadonlySet<string>): PersonResource {
  const source = { type: 'CONTACT', id: sourceIdOf(c) };
  const out: PersonResource = { resourceName: `people/${c.id}`, etag: personEtag(c) };
  if (c.deleted) {
    out.metadata = { sources: [source], deleted: true };
    return out;
  }
  for (const field of PERSON_FIELDS) {
    if (!mask.has(field)) continue;
    if (field === 'metadata')
      out.metadata = {
        sources: [{ ...source, etag: sourceEtag(c), updateTime: iso(c.updated) }],
        objectType: 'PERSON',
      };
    else if (field === 'memberships') {
      if (c.groups.length)
        out.memberships = c.groups.map((id) => ({
          metadata: { source },
          contactGroupMembership: { contactGroupId: id, contactGroupResourceName: `contactGroups/${id}` },
        }));
    } else {
      const items = c.fields[field];
      if (!items?.length) continue;
      const chosen = items.findIndex((i) => (i.metadata as FieldMetadata | undefined)?.sourcePrimary);
      const primary = chosen >= 0 ? chosen : 0;
      out[field] = items.map((item, i) => renderItem(field, item, i === primary, source));
    }
  }
  return out;
}

/** `people/me`: the account's own profile (its address; the fake keeps no other profile data). */
function renderProfile(book: ContactBook, mask: ReadonlySet<string>): PersonResource {
  const out: PersonResource = {
    resourceName: `people/${book.accountId}`,
    etag: `%E${b64(`profile ${book.accountId}`)}`,
  };
  if (mask.has('metadata'))
    out.metadata = {
      sources: [{ type: 'PROFILE', id: book.accountId, etag: `#${b64(`profile ${book.accountId}`)}` }],
      objectType: 'PERSON',
    };
  if (mask.has('emailAddresses'))
    out.emailAddresses = [
      {
        metadata: { primary: true, verified: true, source: { type: 'ACCOUNT', id: book.accountId } },
        value: book.email,
      },
    ];
  return out;
}

const GROUP_FIELDS = new Set(['clientData', 'groupType', 'memberCount', 'metadata', 'name']);

function groupMask(text: string | null | undefined, byDefault: string): Set<string> {
  const paths = (text || byDefault)
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of paths) if (!GROUP_FIELDS.has(p)) throw invalid(`Invalid groupFields mask path: "${p}".`);
  return new Set(paths);
}

function renderGroup(
  book: ContactBook,
  g: StoredGroup,
  mask: ReadonlySet<string>,
  maxMembers = 0,
): Record<string, unknown> {
  const out: Record<string, unknown> = { resourceName: `contactGroups/${g.id}`, etag: groupEtag(g) };
  if (g.deleted) return { ...out, metadata: { updateTime: iso(g.updated), deleted: true } };
  const members = book.members(g);
  if (mask.has('metadata')) out.metadata = { updateTime: iso(g.updated) };
  if (mask.has('groupType')) out.groupType = g.system ? 'SYSTEM_CONTACT_GROUP' : 'USER_CONTACT_GROUP';
  if (mask.has('name')) {
    out.name = g.name;
    out.formattedName = SYSTEM_GROUPS.find(([id]) => id === g.id)?.[1] ?? g.name;
  }
  if (maxMembers > 0 && members.length)
    out.memberResourceNames = members.slice(0, maxMembers).map((c) => `people/${c.id}`);
  // proto3 JSON: a count of zero is left out.
  if (mask.has('memberCount') && members.length) out.memberCount = members.length;
  if (mask.has('clientData') && g.clientData?.length) out.clientData = g.clientData;
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Requests: masks, bodies, tokens
// ---------------------------------------------------------------------------------------------------

export interface PeopleCall {
  book: ContactBook;
  state: PeopleState;
  method: DiscoveryMethod;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
}

export interface PeopleAnswer {
  status: number;
  body?: unknown;
}

const ok = (body: unknown): PeopleAnswer => ({ status: 200, body });

/**
 * personFields (or the older requestMask.includeField, `person.names,...`): required where the
 * description says a missing one is a 400, all fields where it says so by default.
 */
function personMask(call: PeopleCall, required: boolean): Set<string> {
  const legacy = call.query.get('requestMask.includeField');
  const text = call.query.get('personFields') ?? legacy?.replace(/(^|,)\s*person\./g, '$1');
  if (!text) {
    if (required) throw invalid(`personFields mask is required. Please specify one or more valid paths. ${DOCS}`);
    return new Set(PERSON_FIELDS);
  }
  const paths = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of paths)
    if (!(PERSON_FIELDS as readonly string[]).includes(p))
      throw invalid(`Invalid personFields mask path: "${p}". ${DOCS}`);
  return new Set(paths);
}

type PersonBody = Partial<Record<PersonField, FieldItem[]>> & {
  etag?: string;
  resourceName?: string;
  metadata?: { sources?: { type?: string; etag?: string }[] };
};

function checkSingletons(body: PersonBody, fields: readonly PersonField[]): void {
  for (const field of SINGLETONS)
    if (fields.includes(field) && (body[field]?.length ?? 0) > 1)
      throw invalid(`Invalid person.${field}, only a single field can be specified for a contact.`);
}

/** A field's items as stored: read-only parts dropped (the server writes them). */
function storedItems(items: FieldItem[] | undefined): FieldItem[] | undefined {
  if (!items?.length) return undefined;
  return items.map((item) => Object.fromEntries(Object.entries(item).filter(([k]) => !READ_ONLY_ITEM_KEYS.has(k))));
}

/** The contact groups a memberships field names; unknown groups and closed system groups are refused. */
function groupsOf(book: ContactBook, memberships: FieldItem[] | undefined, current: readonly string[]): string[] {
  const ids: string[] = [];
  for (const m of memberships ?? []) {
    const membership = m.contactGroupMembership as
      { contactGroupResourceName?: string; contactGroupId?: string } | undefined;
    if (!membership) continue;
    const name = membership.contactGroupResourceName ?? `contactGroups/${membership.contactGroupId ?? ''}`;
    const group = book.liveGroup(name);
    if (group.system && !OPEN_SYSTEM_GROUPS.has(group.id) && !current.includes(group.id))
      throw invalid(`Cannot add contacts to the system contact group ${name}.`);
    if (!ids.includes(group.id)) ids.push(group.id);
  }
  return ids;
}

interface Cursor {
  /** Items already given. */
  o: number;
  /** The book's change counter when the first page was read. */
  s: number;
  /** When the full sync this chain of tokens started with was made. */
  f: number;
}

interface SyncToken {
  k: 'contacts' | 'groups';
  s: number;
  f: number;
}

const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

function decode<T>(text: string, valid: (v: Record<string, unknown>) => boolean): T | undefined {
  try {
    const v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Record<string, unknown>;
    return v && typeof v === 'object' && valid(v) ? (v as T) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A sync token's position. Expired (7 days after its full sync, or before the book's floor) and
 * unreadable tokens both get the EXPIRED_SYNC_TOKEN error: either way the client must sync in full.
 */
function syncSince(call: PeopleCall, kind: SyncToken['k']): SyncToken | undefined {
  const text = call.query.get('syncToken');
  if (!text) return undefined;
  const token = decode<SyncToken>(text, (v) => v.k === kind && typeof v.s === 'number' && typeof v.f === 'number');
  const { book, state } = call;
  // The 7-day lifetime is documented for connections; group tokens only end with the floor.
  const aged = !!token && kind === 'contacts' && state.now - token.f > SYNC_TOKEN_LIFETIME_MS;
  if (!token || token.s < book.floor || token.s > book.seq || aged) throw expiredSyncToken();
  return token;
}

function cursorOf(call: PeopleCall, sync: SyncToken | undefined): Cursor {
  const text = call.query.get('pageToken');
  if (!text) return { o: 0, s: call.book.seq, f: sync?.f ?? call.state.now };
  const cursor = decode<Cursor>(text, (v) => ['o', 's', 'f'].every((k) => typeof v[k] === 'number'));
  if (!cursor) throw invalid('Invalid pageToken.');
  return cursor;
}

function pageSizeOf(call: PeopleCall, byDefault: number): number {
  const n = Number(call.query.get('pageSize') ?? 0);
  if (n < 0 || n > 1000) throw invalid('pageSize must be between 1 and 1000.');
  return n === 0 ? byDefault : n;
}

// ---------------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------------

function sortKey(c: StoredContact, part: 'givenName' | 'familyName'): string {
  const name = c.fields.names?.[0];
  const value = name?.[part] ?? nameParts(name ?? {}).display ?? '';
  return String(value).toLowerCase();
}

/** readMask of otherContacts.list: required, and only these fields (People answers 400 for others). */
const OTHER_FIELDS = new Set(['emailAddresses', 'metadata', 'names', 'phoneNumbers', 'photos']);

function listOtherContacts(call: PeopleCall): PeopleAnswer {
  const mask = (call.query.get('readMask') ?? '').split(',').filter(Boolean);
  if (!mask.length) throw invalid('readMask is required. Please specify one or more valid paths.');
  const wrong = mask.filter((f) => !OTHER_FIELDS.has(f));
  if (wrong.length)
    throw invalid(`Invalid readMask path "${wrong[0]}". Valid paths are ${[...OTHER_FIELDS].join(', ')}.`);
  const size = Math.min(Number(call.query.get('pageSize') ?? 100) || 100, 1000);
  const offset = Number(call.query.get('pageToken') ?? 0) || 0;
  const all = [...call.book.others.values()].sort((a, b) => a.updated - b.updated);
  const page = all.slice(offset, offset + size);
  const wants = new Set(mask);
  return ok(
    compact({
      otherContacts: page.length
        ? page.map((o) => ({
            resourceName: o.resourceName,
            etag: `%${o.updated.toString(36)}`,
            ...(wants.has('metadata')
              ? {
                  metadata: {
                    sources: [
                      {
                        type: 'OTHER_CONTACT',
                        id: o.resourceName.slice(15),
                        updateTime: new Date(o.updated).toISOString(),
                      },
                    ],
                  },
                }
              : {}),
            ...(wants.has('names') && o.name
              ? { names: [{ displayName: o.name, givenName: o.name.split(' ')[0] }] }
              : {}),
            ...(wants.has('emailAddresses') ? { emailAddresses: [{ value: o.email }] } : {}),
          }))
        : undefined,
      nextPageToken: all.length > offset + size ? String(offset + size) : undefined,
      totalSize: all.length || undefined,
    }),
  );
}

function listConnections(call: PeopleCall): PeopleAnswer {
  if (call.params.resourceName !== 'people/me') throw invalid('Only people/me is valid for listing connections.');
  const { book } = call;
  const mask = personMask(call, true);
  const size = pageSizeOf(call, 100);
  const sync = syncSince(call, 'contacts');
  const cursor = cursorOf(call, sync);
  let people: StoredContact[];
  if (sync) {
    people = [...book.contacts.values()]
      .filter((c) => c.seq > sync.s && c.seq <= cursor.s)
      .sort((a, b) => a.seq - b.seq);
  } else {
    people = [...book.contacts.values()].filter((c) => !c.deleted);
    const order = call.query.get('sortOrder') ?? 'LAST_MODIFIED_ASCENDING';
    if (order === 'FIRST_NAME_ASCENDING' || order === 'LAST_NAME_ASCENDING') {
      const part = order === 'FIRST_NAME_ASCENDING' ? 'givenName' : 'familyName';
      people.sort((a, b) => sortKey(a, part).localeCompare(sortKey(b, part)) || a.seq - b.seq);
    } else {
      people.sort((a, b) => a.updated - b.updated || a.seq - b.seq);
      if (order === 'LAST_MODIFIED_DESCENDING') people.reverse();
    }
  }
  const pageItems = people.slice(cursor.o, cursor.o + size);
  const more = people.length > cursor.o + size;
  const wantsSync = sync !== undefined || call.query.get('requestSyncToken') === 'true';
  return ok(
    compact({
      connections: pageItems.length ? pageItems.map((c) => renderContact(c, mask)) : undefined,
      nextPageToken: more ? encode({ o: cursor.o + size, s: cursor.s, f: cursor.f }) : undefined,
      nextSyncToken: !more && wantsSync ? encode({ k: 'contacts', s: cursor.s, f: cursor.f }) : undefined,
      totalPeople: people.length || undefined,
      totalItems: people.length || undefined,
    }),
  );
}

function getPerson(book: ContactBook, resourceName: string, mask: ReadonlySet<string>): PersonResource {
  if (resourceName === 'people/me' || resourceName === `people/${book.accountId}`) return renderProfile(book, mask);
  return renderContact(book.liveContact(resourceName), mask);
}

function createContact(call: PeopleCall): PeopleAnswer {
  const { book, state } = call;
  const body = (call.body ?? {}) as PersonBody;
  checkSingletons(body, UPDATABLE);
  const mask = personMask(call, false);
  const contact: StoredContact = {
    id: state.newContactId(),
    fields: {},
    groups: [],
    version: 0,
    updated: state.now,
    seq: 0,
    deleted: false,
  };
  for (const field of UPDATABLE) {
    if (field === 'memberships') continue;
    const items = storedItems(body[field]);
    if (items) contact.fields[field] = items;
  }
  const groups = groupsOf(book, body.memberships, []);
  contact.groups = groups.length ? groups : ['myContacts'];
  book.touch(contact, state.now);
  book.contacts.set(contact.id, contact);
  for (const id of contact.groups) book.touch(book.groups.get(id)!, state.now);
  return ok(renderContact(contact, mask));
}

function updateContact(call: PeopleCall): PeopleAnswer {
  const { book, state } = call;
  const contact = book.liveContact(call.params.resourceName!);
  const body = (call.body ?? {}) as PersonBody;
  const maskText = call.query.get('updatePersonFields');
  if (!maskText) throw invalid('updatePersonFields mask is required. Please specify one or more valid paths. ' + DOCS);
  const paths = maskText
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean) as PersonField[];
  for (const p of paths)
    if (!UPDATABLE.includes(p)) throw invalid(`Invalid updatePersonFields mask path: "${p}". ${DOCS}`);
  const sourceTag = body.metadata?.sources?.find((s) => s.type === 'CONTACT')?.etag;
  if (body.etag === undefined && sourceTag === undefined)
    throw invalid('Request must set person.etag or person.metadata.sources.etag for the source that is being updated.');
  if (
    (body.etag !== undefined && body.etag !== personEtag(contact)) ||
    (sourceTag !== undefined && sourceTag !== sourceEtag(contact))
  )
    throw precondition(
      'Request person.etag is different than the current person.etag. Clear local cache and get the latest person.',
    );
  checkSingletons(body, paths);
  const touched = new Set<string>();
  for (const field of paths) {
    if (field === 'memberships') {
      const groups = groupsOf(book, body.memberships, contact.groups);
      if (!groups.length) throw invalid('A contact must keep at least one contact group membership.');
      for (const id of new Set([...groups, ...contact.groups]))
        if (groups.includes(id) !== contact.groups.includes(id)) touched.add(id);
      contact.groups = groups;
      continue;
    }
    const items = storedItems(body[field]);
    if (items) contact.fields[field] = items;
    else delete contact.fields[field];
  }
  book.touch(contact, state.now);
  for (const id of touched) book.touch(book.groups.get(id)!, state.now);
  return ok(renderContact(contact, personMask(call, false)));
}

function removeContact(book: ContactBook, contact: StoredContact, now: number): void {
  for (const id of contact.groups) book.touch(book.groups.get(id)!, now);
  contact.groups = [];
  contact.fields = {};
  contact.deleted = true;
  book.touch(contact, now);
}

function listGroups(call: PeopleCall): PeopleAnswer {
  const { book } = call;
  const mask = groupMask(call.query.get('groupFields'), 'metadata,groupType,memberCount,name');
  const size = pageSizeOf(call, 30);
  const sync = syncSince(call, 'groups');
  const cursor = cursorOf(call, sync);
  const all = [...book.groups.values()];
  const groups = sync ? all.filter((g) => g.seq > sync.s && g.seq <= cursor.s) : all.filter((g) => !g.deleted);
  const more = groups.length > cursor.o + size;
  return ok(
    compact({
      contactGroups: groups.slice(cursor.o, cursor.o + size).map((g) => renderGroup(book, g, mask)),
      totalItems: groups.length || undefined,
      nextPageToken: more ? encode({ o: cursor.o + size, s: cursor.s, f: cursor.f }) : undefined,
      nextSyncToken: more ? undefined : encode({ k: 'groups', s: cursor.s, f: cursor.f }),
    }),
  );
}

interface GroupBody {
  contactGroup?: { name?: string; etag?: string; clientData?: { key?: string; value?: string }[] };
  updateGroupFields?: string;
  readGroupFields?: string;
}

function groupName(book: ContactBook, name: string | undefined, except?: string): string {
  const text = name?.trim() ?? '';
  if (!text) throw invalid('Contact group name must not be empty.');
  const taken = [...book.groups.values()].some(
    (g) => !g.deleted && g.id !== except && g.name.toLowerCase() === text.toLowerCase(),
  );
  if (taken) throw new PeopleError(409, 'ALREADY_EXISTS', 'Contact group name already exists.', 'alreadyExists');
  return text;
}

function userGroup(book: ContactBook, resourceName: string): StoredGroup {
  const group = book.liveGroup(resourceName);
  if (group.system) throw invalid(`Cannot change the system contact group ${resourceName}.`);
  return group;
}

interface ModifyBody {
  resourceNamesToAdd?: string[];
  resourceNamesToRemove?: string[];
}

function modifyMembers(call: PeopleCall): PeopleAnswer {
  const { book, state } = call;
  const group = book.liveGroup(call.params.resourceName!);
  const body = (call.body ?? {}) as ModifyBody;
  const add = body.resourceNamesToAdd ?? [];
  const remove = body.resourceNamesToRemove ?? [];
  if (!add.length && !remove.length) throw invalid('resourceNamesToAdd or resourceNamesToRemove must be set.');
  if (add.length + remove.length > 1000) throw invalid('At most 1000 resource names can be added or removed at once.');
  if (add.length && group.system && !OPEN_SYSTEM_GROUPS.has(group.id))
    throw invalid(`Cannot add contacts to the system contact group contactGroups/${group.id}.`);
  const notFoundNames: string[] = [];
  const lastGroup: string[] = [];
  const find = (name: string) => {
    try {
      return book.liveContact(name);
    } catch {
      notFoundNames.push(name);
      return undefined;
    }
  };
  let changed = false;
  for (const name of add) {
    const contact = find(name);
    if (!contact || contact.groups.includes(group.id)) continue;
    contact.groups.push(group.id);
    book.touch(contact, state.now);
    changed = true;
  }
  for (const name of remove) {
    const contact = find(name);
    if (!contact || !contact.groups.includes(group.id)) continue;
    if (contact.groups.length === 1) {
      lastGroup.push(name);
      continue;
    }
    contact.groups = contact.groups.filter((id) => id !== group.id);
    book.touch(contact, state.now);
    changed = true;
  }
  if (changed) book.touch(group, state.now);
  return ok(
    compact({
      notFoundResourceNames: notFoundNames.length ? notFoundNames : undefined,
      canNotRemoveLastContactGroupResourceNames: lastGroup.length ? lastGroup : undefined,
    }),
  );
}

/** The handlers, by discovery method id. */
export const PEOPLE_HANDLERS: Record<string, (call: PeopleCall) => PeopleAnswer> = {
  'people.people.connections.list': listConnections,
  'people.otherContacts.list': listOtherContacts,

  'people.people.get': (call) => ok(getPerson(call.book, call.params.resourceName!, personMask(call, true))),

  'people.people.getBatchGet': (call) => {
    const names = call.query.getAll('resourceNames');
    if (!names.length) throw invalid('resourceNames must not be empty.');
    if (names.length > 200) throw invalid('At most 200 resourceNames can be requested.');
    const mask = personMask(call, true);
    const responses = names.map((name) => {
      try {
        return {
          requestedResourceName: name,
          httpStatusCode: 200,
          person: getPerson(call.book, name, mask),
          status: {},
        };
      } catch (e) {
        if (!(e instanceof GoogleApiError) || e.code !== 404) throw e;
        return { requestedResourceName: name, httpStatusCode: 404, status: { code: 5, message: e.message } };
      }
    });
    return ok({ responses });
  },

  'people.people.createContact': createContact,
  'people.people.updateContact': updateContact,

  'people.people.deleteContact': (call) => {
    removeContact(call.book, call.book.liveContact(call.params.resourceName!), call.state.now);
    return ok({});
  },

  'people.contactGroups.list': listGroups,

  'people.contactGroups.get': (call) => {
    const group = call.book.liveGroup(call.params.resourceName!);
    const mask = groupMask(call.query.get('groupFields'), 'metadata,groupType,memberCount,name');
    return ok(renderGroup(call.book, group, mask, Number(call.query.get('maxMembers') ?? 0)));
  },

  'people.contactGroups.batchGet': (call) => {
    const names = call.query.getAll('resourceNames');
    if (!names.length) throw invalid('resourceNames must not be empty.');
    if (names.length > 200) throw invalid('At most 200 resourceNames can be requested.');
    const mask = groupMask(call.query.get('groupFields'), 'metadata,groupType,memberCount,name');
    const maxMembers = Number(call.query.get('maxMembers') ?? 0);
    const responses = names.map((name) => {
      try {
        const contactGroup = renderGroup(call.book, call.book.liveGroup(name), mask, maxMembers);
        return { requestedResourceName: name, status: {}, contactGroup };
      } catch (e) {
        if (!(e instanceof GoogleApiError) || e.code !== 404) throw e;
        return { requestedResourceName: name, status: { code: 5, message: e.message } };
      }
    });
    return ok({ responses });
  },

  'people.contactGroups.create': (call) => {
    const { book, state } = call;
    const body = (call.body ?? {}) as GroupBody;
    const mask = groupMask(body.readGroupFields, 'metadata,groupType,name');
    const group: StoredGroup = {
      id: state.newGroupId(),
      name: groupName(book, body.contactGroup?.name),
      system: false,
      ...(body.contactGroup?.clientData?.length ? { clientData: body.contactGroup.clientData } : {}),
      version: 0,
      updated: state.now,
      seq: 0,
      deleted: false,
    };
    book.touch(group, state.now);
    book.groups.set(group.id, group);
    return ok(renderGroup(book, group, mask));
  },

  'people.contactGroups.update': (call) => {
    const { book, state } = call;
    const group = userGroup(book, call.params.resourceName!);
    const body = (call.body ?? {}) as GroupBody;
    const sent = body.contactGroup ?? {};
    if (sent.etag !== undefined && sent.etag !== groupEtag(group))
      throw precondition(
        'Request contactGroup.etag is different than the current etag. Clear local cache and get the latest contact group.',
      );
    const fields = (body.updateGroupFields || 'name').split(',').map((p) => p.trim());
    for (const f of fields)
      if (f !== 'name' && f !== 'clientData') throw invalid(`Invalid updateGroupFields mask path: "${f}".`);
    if (fields.includes('name')) group.name = groupName(book, sent.name, group.id);
    if (fields.includes('clientData')) group.clientData = sent.clientData?.length ? sent.clientData : undefined;
    book.touch(group, state.now);
    return ok(renderGroup(book, group, groupMask(body.readGroupFields, 'metadata,groupType,name')));
  },

  'people.contactGroups.delete': (call) => {
    const { book, state } = call;
    const group = userGroup(book, call.params.resourceName!);
    const deleteContacts = call.query.get('deleteContacts') === 'true';
    for (const contact of book.members(group)) {
      if (deleteContacts) removeContact(book, contact, state.now);
      else {
        contact.groups = contact.groups.filter((id) => id !== group.id);
        book.touch(contact, state.now);
      }
    }
    group.deleted = true;
    book.touch(group, state.now);
    return ok({});
  },

  'people.contactGroups.members.modify': modifyMembers,
};

/** Makes every sync token of the user's contacts and groups so far expired. */
export function expireSync(state: PeopleState, email: string): void {
  const book = state.requiredBook(email);
  book.floor = ++book.seq;
}
