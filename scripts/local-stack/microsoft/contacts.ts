import { randomBytes } from 'node:crypto';
import { badRequest, GraphError, itemNotFound, UnsupportedByFakeError } from './errors';
import { deltaPage, maxPageSize, page, type GraphAnswer, type GraphCall, type GraphUser } from './mail';
import { compileFilter, compileOrderBy, type Fields } from './query';
import { exchangeId } from './ids';

/**
 * The state and the handlers of the local Graph fake's personal contacts: each user's contacts, the
 * default Contacts folder (made with the user, never listed under `contactFolders`, as Outlook's) and
 * the folders under it, the tombstones `contacts/delta` reports as `@removed`, and each operation's
 * handler keyed by the description's operationId. As for mail, the server checks every request and
 * answer against the descriptions (contacts.json, users-functions-contacts.json); a handler here only
 * has to be right about behaviour:
 *   - `/contacts` is the default folder's contacts only; `/contacts/{id}` reaches a contact in any folder;
 *   - a contact lives in one folder; deleting a folder deletes its contacts;
 *   - Exchange keeps at most 3 email addresses, 2 business and 2 home phones, 3 IM addresses;
 *   - `$filter` takes `emailAddresses/any(a:a/address eq '…')` (the only form Graph's "List contacts"
 *     page allows over email addresses) and comparisons of names, company, folder, dates, categories;
 *   - delta is per folder: a first round lists the folder, a deltaLink's round what changed since and
 *     `@removed` for what left it; `$select` stays with the round's links; `expireDelta` makes every
 *     token of the user answer 410 `syncStateNotFound`.
 */

// ---------------------------------------------------------------------------------------------------
// Stored resources
// ---------------------------------------------------------------------------------------------------

interface PhysicalAddress {
  street?: string | null;
  city?: string | null;
  state?: string | null;
  countryOrRegion?: string | null;
  postalCode?: string | null;
}

/** The properties of a contact a client sets (Graph's names), as stored. */
const STRINGS = [
  'assistantName',
  'businessHomePage',
  'companyName',
  'department',
  'displayName',
  'fileAs',
  'generation',
  'givenName',
  'initials',
  'jobTitle',
  'manager',
  'middleName',
  'mobilePhone',
  'nickName',
  'officeLocation',
  'personalNotes',
  'profession',
  'spouseName',
  'surname',
  'title',
  'yomiCompanyName',
  'yomiGivenName',
  'yomiSurname',
] as const;
const LISTS = ['businessPhones', 'homePhones', 'imAddresses', 'children', 'categories'] as const;
const ADDRESSES = ['businessAddress', 'homeAddress', 'otherAddress'] as const;
/** What Exchange can hold of each multi-valued property (EmailAddress1-3, BusinessPhone/2, HomePhone/2, IMAddress1-3). */
const LIMITS: Record<string, number> = { emailAddresses: 3, businessPhones: 2, homePhones: 2, imAddresses: 3 };
/** Properties Graph sets itself: a client that sends one is refused, as the fake does not pretend to move or version. */
const READ_ONLY = ['id', 'changeKey', 'createdDateTime', 'lastModifiedDateTime', 'parentFolderId'];
const NAVIGATION = ['extensions', 'photo', 'singleValueExtendedProperties', 'multiValueExtendedProperties'];

type Strings = Partial<Record<(typeof STRINGS)[number], string | null>>;
type Lists = Record<(typeof LISTS)[number], string[]>;
type Addresses = Record<(typeof ADDRESSES)[number], PhysicalAddress>;

export interface StoredContact extends Strings, Lists, Addresses {
  id: string;
  folderId: string;
  changeKey: string;
  created: number;
  modified: number;
  /** The user's change sequence when it last changed: what delta reads. */
  seq: number;
  birthday: number | null;
  emailAddresses: { name?: string | null; address?: string | null }[];
  /** Whether the client named the display name (else it follows the names, as Outlook's). */
  displayNameSet: boolean;
}

export interface StoredContactFolder {
  id: string;
  displayName: string;
  parentFolderId: string;
}

type DeltaCursor =
  | { kind: 'page'; folderId: string; removed: string[]; ids: string[]; endSeq: number; select?: string[] }
  | { kind: 'delta'; folderId: string; sinceSeq: number; select?: string[] };

const newChangeKey = () => randomBytes(12).toString('base64');
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export interface ContactsEnvironment {
  now: () => number;
}

/** One user's contacts and contact folders. */
export class UserContacts {
  readonly contacts = new Map<string, StoredContact>();
  readonly folders = new Map<string, StoredContactFolder>();
  readonly tombstones: { id: string; folderId: string; seq: number }[] = [];
  readonly cursors = new Map<string, DeltaCursor>();
  /** The default Contacts folder (`/contacts`): not one of `folders`, which are its children. */
  readonly defaultId = exchangeId('AAEOAAA=');
  seq = 0;

  constructor(
    readonly user: GraphUser,
    private readonly env: ContactsEnvironment,
  ) {}

  get now(): number {
    return this.env.now();
  }

  /** A folder by ID: the default one, or one of those under it. */
  folderExists(id: string): boolean {
    return id === this.defaultId || this.folders.has(id);
  }

  folder(id: string): StoredContactFolder {
    const folder = this.folders.get(id);
    if (!folder) throw itemNotFound();
    return folder;
  }

  contact(id: string, folderId?: string): StoredContact {
    const contact = this.contacts.get(id);
    if (!contact || (folderId !== undefined && contact.folderId !== folderId)) throw itemNotFound();
    return contact;
  }

  touch(contact: StoredContact): void {
    contact.modified = this.now;
    contact.changeKey = newChangeKey();
    contact.seq = ++this.seq;
  }

  create(folderId: string, body: Record<string, unknown>): StoredContact {
    const now = this.now;
    const contact: StoredContact = {
      id: exchangeId('AAA='),
      folderId,
      changeKey: '',
      created: now,
      modified: now,
      seq: 0,
      birthday: null,
      emailAddresses: [],
      businessPhones: [],
      homePhones: [],
      imAddresses: [],
      children: [],
      categories: [],
      businessAddress: {},
      homeAddress: {},
      otherAddress: {},
      displayNameSet: false,
    };
    applyBody(contact, body);
    this.contacts.set(contact.id, contact);
    this.touch(contact);
    return contact;
  }

  update(contact: StoredContact, body: Record<string, unknown>): StoredContact {
    applyBody(contact, body);
    this.touch(contact);
    return contact;
  }

  remove(contact: StoredContact): void {
    this.contacts.delete(contact.id);
    this.tombstones.push({ id: contact.id, folderId: contact.folderId, seq: ++this.seq });
  }

  newCursor(cursor: DeltaCursor): string {
    const token = `R0usm${randomBytes(18).toString('base64url')}`;
    this.cursors.set(token, cursor);
    return token;
  }

  expireDelta(): void {
    this.cursors.clear();
  }
}

/** Another client's change to a user's contacts (Outlook, a phone), so that delta has something to report. */
export type ContactOutsideChange =
  | { kind: 'createContact'; contact: Record<string, unknown>; folder?: string }
  | { kind: 'updateContact'; id: string; contact: Record<string, unknown> }
  | { kind: 'deleteContact'; id: string };

export class ContactState {
  readonly users = new Map<string, UserContacts>();

  constructor(private readonly env: ContactsEnvironment) {}

  addUser(user: GraphUser): UserContacts {
    const contacts = new UserContacts(user, this.env);
    this.users.set(user.id, contacts);
    return contacts;
  }

  of(user: GraphUser): UserContacts {
    const contacts = this.users.get(user.id);
    if (!contacts) throw new Error(`the Graph fake has no contacts for ${user.mail}`);
    return contacts;
  }

  required(email: string): UserContacts {
    const key = email.toLowerCase();
    for (const c of this.users.values()) if (c.user.mail.toLowerCase() === key) return c;
    throw new Error(`the Graph fake has no user ${email}`);
  }

  changeOutside(email: string, change: ContactOutsideChange): { id: string } | undefined {
    const owner = this.required(email);
    switch (change.kind) {
      case 'createContact':
        return { id: owner.create(change.folder ?? owner.defaultId, checkedBody(change.contact)).id };
      case 'updateContact':
        return { id: owner.update(owner.contact(change.id), checkedBody(change.contact)).id };
      case 'deleteContact':
        owner.remove(owner.contact(change.id));
        return undefined;
    }
  }

  reset(): void {
    this.users.clear();
  }
}

// ---------------------------------------------------------------------------------------------------
// Bodies clients send
// ---------------------------------------------------------------------------------------------------

/** A contact body the description allowed, checked for what Exchange cannot hold or the fake does not do. */
function checkedBody(body: unknown): Record<string, unknown> {
  const fields = (body ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (key.startsWith('@odata.')) continue;
    if (READ_ONLY.includes(key)) throw badRequest(`The property '${key}' is read-only and cannot be set.`);
    if (NAVIGATION.includes(key)) throw new UnsupportedByFakeError(`setting the navigation property '${key}'`);
  }
  for (const [key, max] of Object.entries(LIMITS)) {
    const value = fields[key];
    if (Array.isArray(value) && value.length > max)
      throw new GraphError(400, 'ErrorInvalidProperty', `The property '${key}' takes at most ${max} values.`);
  }
  return fields;
}

function applyBody(contact: StoredContact, body: Record<string, unknown>): void {
  const names = ['givenName', 'middleName', 'surname'] as const;
  for (const key of STRINGS) if (key in body) contact[key] = (body[key] as string | null) ?? null;
  for (const key of LISTS)
    if (key in body)
      contact[key] = ((body[key] as (string | null)[] | null) ?? []).flatMap((v) => (v == null ? [] : [v]));
  for (const key of ADDRESSES)
    if (key in body) {
      const given = (body[key] ?? {}) as PhysicalAddress;
      // A complex property is replaced whole; a member sent null is cleared.
      contact[key] = Object.fromEntries(Object.entries(given).filter(([, v]) => v != null)) as PhysicalAddress;
    }
  if ('emailAddresses' in body)
    contact.emailAddresses = ((body.emailAddresses ?? []) as StoredContact['emailAddresses']).map((e) => ({
      ...(e.name != null ? { name: e.name } : {}),
      ...(e.address != null ? { address: e.address } : {}),
    }));
  if ('birthday' in body) {
    const value = body.birthday as string | null;
    contact.birthday = value == null ? null : Date.parse(value);
  }
  if ('displayName' in body) contact.displayNameSet = body.displayName != null;
  else if (!contact.displayNameSet && names.some((n) => n in body))
    contact.displayName =
      names
        .map((n) => contact[n])
        .filter(Boolean)
        .join(' ') || null;
}

// ---------------------------------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------------------------------

export function renderContact(c: StoredContact): Record<string, unknown> {
  return {
    '@odata.etag': `W/"${c.changeKey}"`,
    id: c.id,
    createdDateTime: iso(c.created),
    lastModifiedDateTime: iso(c.modified),
    changeKey: c.changeKey,
    categories: c.categories,
    parentFolderId: c.folderId,
    birthday: c.birthday === null ? null : iso(c.birthday),
    ...Object.fromEntries(STRINGS.map((k) => [k, c[k] ?? null])),
    fileAs: c.fileAs ?? '',
    personalNotes: c.personalNotes ?? '',
    emailAddresses: c.emailAddresses,
    businessPhones: c.businessPhones,
    homePhones: c.homePhones,
    imAddresses: c.imAddresses,
    children: c.children,
    businessAddress: c.businessAddress,
    homeAddress: c.homeAddress,
    otherAddress: c.otherAddress,
  };
}

const renderFolder = (f: StoredContactFolder) => ({
  id: f.id,
  displayName: f.displayName,
  parentFolderId: f.parentFolderId,
});

const listOf = (v: string | null) => (v ? v.split(',').map((s) => s.trim()) : undefined);

function project(entity: Record<string, unknown>, select: readonly string[] | undefined): Record<string, unknown> {
  if (!select?.length) return entity;
  return Object.fromEntries(
    Object.entries(entity).filter(([k]) => k === 'id' || k.startsWith('@odata.') || select.includes(k)),
  );
}

// ---------------------------------------------------------------------------------------------------
// Query options
// ---------------------------------------------------------------------------------------------------

export interface ContactCall extends GraphCall {
  contacts: ContactState;
}

function contactFields(call: ContactCall): Fields<StoredContact> {
  const declared = call.checker.propertiesOf('contacts', 'microsoft.graph.contact');
  return {
    typeName: 'microsoft.graph.contact',
    declared: (p) => declared.has(p),
    fields: {
      givenName: { type: 'string', get: (c) => c.givenName },
      surname: { type: 'string', get: (c) => c.surname },
      displayName: { type: 'string', get: (c) => c.displayName },
      companyName: { type: 'string', get: (c) => c.companyName },
      parentFolderId: { type: 'string', get: (c) => c.folderId },
      createdDateTime: { type: 'datetime', get: (c) => c.created },
      lastModifiedDateTime: { type: 'datetime', get: (c) => c.modified },
      categories: { type: 'strings', get: (c) => c.categories },
      // `emailAddresses/any(a:a/address eq '…')`, rewritten (contactFilter) to a lambda over the addresses.
      'emailAddresses/address': {
        type: 'strings',
        get: (c) => c.emailAddresses.flatMap((e) => (e.address ? [e.address] : [])),
      },
    },
  };
}

const EMAIL_ANY = /\bemailAddresses\/any\(\s*(\w+)\s*:\s*\1\/address\s+eq\s+('(?:[^']|'')*')\s*\)/gi;

function contactFilter(call: ContactCall, filter: string | null): (c: StoredContact) => boolean {
  if (filter === null) return () => true;
  const rewritten = filter.replace(
    EMAIL_ANY,
    (_all, v: string, literal: string) => `emailAddresses/address/any(${v}:${v} eq ${literal})`,
  );
  if (/\bemailAddresses\b(?!\/address\/any)/i.test(rewritten))
    throw badRequest(
      "Only the 'address' sub-property of emailAddresses can be filtered, with any() and eq: emailAddresses/any(a:a/address eq '…').",
    );
  return compileFilter(rewritten, contactFields(call));
}

function unsupported(call: GraphCall, options: string[], where: string): void {
  for (const option of options) if (call.query.has(option)) throw new UnsupportedByFakeError(`${option} on ${where}`);
}

// ---------------------------------------------------------------------------------------------------
// Handlers, by operationId
// ---------------------------------------------------------------------------------------------------

const ownerOf = (call: ContactCall) => call.contacts.of(call.mailbox.user);
const userContext = (call: ContactCall) => `users('${call.mailbox.user.id}')`;
/** The folder a path names (`contactFolders/{id}/…`), or the default one (`/contacts…`). */
function folderIdOf(call: ContactCall): string {
  const owner = ownerOf(call);
  const id = call.params['contactFolder-id'];
  if (id === undefined) return owner.defaultId;
  if (!owner.folderExists(id)) throw itemNotFound();
  return id;
}
/** A contact through its path: `/contacts/{id}` finds it in any folder; under a folder, only there. */
function contactOf(call: ContactCall): StoredContact {
  const folder = call.params['contactFolder-id'] !== undefined ? folderIdOf(call) : undefined;
  return ownerOf(call).contact(call.params['contact-id']!, folder);
}

function listContacts(call: ContactCall): GraphAnswer {
  unsupported(call, ['$search', '$expand'], 'contacts');
  const folderId = folderIdOf(call);
  const predicate = contactFilter(call, call.query.get('$filter'));
  const contacts = [...ownerOf(call).contacts.values()].filter((c) => c.folderId === folderId && predicate(c));
  const orderby = call.query.get('$orderby');
  if (orderby !== null) contacts.sort(compileOrderBy(orderby, contactFields(call)));
  const where = call.params['contactFolder-id'] !== undefined ? `/contactFolders('${folderId}')/contacts` : '/contacts';
  return page(call, contacts, renderContact, `${userContext(call)}${where}`, 1000);
}

function getContact(call: ContactCall): GraphAnswer {
  unsupported(call, ['$expand'], 'a contact');
  return {
    status: 200,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/contacts/$entity`,
      ...project(renderContact(contactOf(call)), listOf(call.query.get('$select'))),
    },
  };
}

function createContact(call: ContactCall): GraphAnswer {
  const contact = ownerOf(call).create(folderIdOf(call), checkedBody(call.body));
  return {
    status: 201,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/contacts/$entity`,
      ...renderContact(contact),
    },
  };
}

function updateContact(call: ContactCall): GraphAnswer {
  const contact = ownerOf(call).update(contactOf(call), checkedBody(call.body));
  return {
    status: 200,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/contacts/$entity`,
      ...renderContact(contact),
    },
  };
}

function deleteContact(call: ContactCall): GraphAnswer {
  const contact = contactOf(call);
  const match = call.headers['if-match'];
  if (typeof match === 'string' && match !== '*' && match !== `W/"${contact.changeKey}"`)
    throw new GraphError(
      412,
      'ErrorIrresolvableConflict',
      'The change key passed in the request does not match the current change key for the item.',
    );
  ownerOf(call).remove(contact);
  return { status: 204 };
}

function listFolders(call: ContactCall): GraphAnswer {
  unsupported(call, ['$search', '$expand', '$orderby'], 'contactFolders');
  const owner = ownerOf(call);
  const filter = call.query.get('$filter');
  const declared = call.checker.propertiesOf('contacts', 'microsoft.graph.contactFolder');
  const predicate =
    filter === null
      ? () => true
      : compileFilter<StoredContactFolder>(filter, {
          typeName: 'microsoft.graph.contactFolder',
          declared: (p) => declared.has(p),
          fields: {
            displayName: { type: 'string', get: (f) => f.displayName },
            parentFolderId: { type: 'string', get: (f) => f.parentFolderId },
          },
        });
  const folders = [...owner.folders.values()].filter(predicate);
  return page(call, folders, renderFolder, `${userContext(call)}/contactFolders`, 1000);
}

function folderAnswer(call: ContactCall, folder: StoredContactFolder, status = 200): GraphAnswer {
  return {
    status,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/contactFolders/$entity`,
      ...renderFolder(folder),
    },
  };
}

function sameName(owner: UserContacts, name: string, except?: string): void {
  for (const f of owner.folders.values())
    if (f.id !== except && f.displayName.toLowerCase() === name.toLowerCase())
      throw new GraphError(409, 'ErrorFolderExists', 'A folder with the specified name already exists.');
}

function folderName(body: unknown): string {
  const name = (body as { displayName?: unknown } | undefined)?.displayName;
  if (typeof name !== 'string' || !name.trim()) throw badRequest("The folder's displayName is required.");
  return name;
}

function createFolder(call: ContactCall): GraphAnswer {
  const owner = ownerOf(call);
  const body = (call.body ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(body))
    if (key !== 'displayName' && !key.startsWith('@odata.'))
      throw new UnsupportedByFakeError(`'${key}' in a new contact folder`);
  const name = folderName(body);
  sameName(owner, name);
  const folder = { id: exchangeId('AAEOAAB='), displayName: name, parentFolderId: owner.defaultId };
  owner.folders.set(folder.id, folder);
  return folderAnswer(call, folder, 201);
}

function updateFolder(call: ContactCall): GraphAnswer {
  const owner = ownerOf(call);
  const folder = owner.folder(call.params['contactFolder-id']!);
  const body = (call.body ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(body))
    if (key !== 'displayName' && !key.startsWith('@odata.'))
      throw new UnsupportedByFakeError(`changing '${key}' of a contact folder`);
  if ('displayName' in body) {
    const name = folderName(body);
    sameName(owner, name, folder.id);
    folder.displayName = name;
  }
  return folderAnswer(call, folder);
}

/** A folder deleted takes its contacts with it (to Deleted Items in Outlook; gone here). */
function deleteFolder(call: ContactCall): GraphAnswer {
  const owner = ownerOf(call);
  const folder = owner.folder(call.params['contactFolder-id']!);
  for (const c of [...owner.contacts.values()]) if (c.folderId === folder.id) owner.remove(c);
  owner.folders.delete(folder.id);
  return { status: 204 };
}

const syncStateNotFound = () =>
  new GraphError(
    410,
    'syncStateNotFound',
    'The sync state is not found or has expired. Start a new sync without a token.',
  );

/** contacts/delta of one folder (the default one for `/contacts/delta`). */
function contactDelta(call: ContactCall): GraphAnswer {
  const owner = ownerOf(call);
  const folderId = folderIdOf(call);
  const { query } = call;
  const token = query.get('$skiptoken') ?? query.get('$deltatoken');
  let cursor: Extract<DeltaCursor, { kind: 'page' }>;
  if (token !== null) {
    const found = owner.cursors.get(token);
    const expected = query.has('$skiptoken') ? 'page' : 'delta';
    if (!found || found.kind !== expected || found.folderId !== folderId) throw syncStateNotFound();
    if (found.kind === 'page') cursor = found;
    else {
      const changed = [...owner.contacts.values()].filter((c) => c.folderId === folderId && c.seq > found.sinceSeq);
      const removed = [
        ...new Set(owner.tombstones.filter((t) => t.folderId === folderId && t.seq > found.sinceSeq).map((t) => t.id)),
      ].filter((id) => owner.contacts.get(id)?.folderId !== folderId);
      cursor = {
        kind: 'page',
        folderId,
        removed,
        ids: changed.map((c) => c.id),
        endSeq: owner.seq,
        ...(found.select ? { select: found.select } : {}),
      };
    }
  } else {
    for (const option of ['$search', '$skip', '$expand', '$filter', '$orderby', '$count'])
      if (query.has(option)) throw new UnsupportedByFakeError(`${option} in a contacts delta query`);
    const select = listOf(query.get('$select'));
    cursor = {
      kind: 'page',
      folderId,
      removed: [],
      ids: [...owner.contacts.values()].filter((c) => c.folderId === folderId).map((c) => c.id),
      endSeq: owner.seq,
      ...(select ? { select } : {}),
    };
  }
  const { value, removed, ids, size } = deltaPage(call, cursor, '#microsoft.graph.contact', (id) => {
    const contact = owner.contacts.get(id);
    return contact && contact.folderId === folderId ? project(renderContact(contact), cursor.select) : undefined;
  });
  const where = `${call.base}${call.path.replace(/\/contactFolders\/[^/]+\/contacts\/delta$/i, `/contactFolders('${folderId}')/contacts/delta`)}`;
  const more = removed.length > 0 || ids.length > 0;
  const next = more
    ? `${where}?$skiptoken=${owner.newCursor({ ...cursor, removed, ids })}`
    : `${where}?$deltatoken=${owner.newCursor({ kind: 'delta', folderId, sinceSeq: cursor.endSeq, ...(cursor.select ? { select: cursor.select } : {}) })}`;
  return {
    status: 200,
    body: {
      '@odata.context': `${call.base}/$metadata#Collection(contact)`,
      [more ? '@odata.nextLink' : '@odata.deltaLink']: next,
      value,
    },
    ...(maxPageSize(call.headers) !== undefined
      ? { headers: { 'Preference-Applied': `odata.maxpagesize=${size}` } }
      : {}),
  };
}

/**
 * Handlers by the descriptions' operationIds. The default folder's paths (`/contacts…`) and a named
 * folder's (`/contactFolders/{id}/contacts…`) have operationIds of their own, served by the same handlers.
 */
export const CONTACT_HANDLERS: Record<string, (call: ContactCall) => GraphAnswer> = {
  user_ListContact: listContacts,
  'user.contactFolder_ListContact': listContacts,
  user_CreateContact: createContact,
  'user.contactFolder_CreateContact': createContact,
  user_GetContact: getContact,
  'user.contactFolder_GetContact': getContact,
  user_UpdateContact: updateContact,
  'user.contactFolder_UpdateContact': updateContact,
  user_DeleteContact: deleteContact,
  'user.contactFolder_DeleteContact': deleteContact,

  user_ListContactFolder: listFolders,
  user_CreateContactFolder: createFolder,
  user_GetContactFolder: (call) => folderAnswer(call, ownerOf(call).folder(call.params['contactFolder-id']!)),
  user_UpdateContactFolder: updateFolder,
  user_DeleteContactFolder: deleteFolder,

  'user.contact_delta': contactDelta,
  'user.contactFolder.contact_delta': contactDelta,
};
