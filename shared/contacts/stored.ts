import type { ContactGroupRecord, ContactRecord } from '#shared/db/contacts';
import * as db from '#shared/db/contacts';
import type { GrantRecord } from '#shared/db/grants';
import { TransactionConditionError } from '#shared/db/transact';
import { contactsOfGrant } from '#shared/db/keys';
import { decodeCursor, decodeOffsetCursor, encodeCursor, encodeOffsetCursor } from '#shared/cursor';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { derivedId, newId, parseId, type ContactGroupId, type GrantId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import type { Contact, ContactGroup, ContactsProvider, Page } from '#shared/providers/contract';
import { clock } from '#shared/time';
import type {
  CreateContactBody,
  CreateContactGroupBody,
  GetContactQuery,
  ListContactsQuery,
  UpdateContactBody,
  UpdateContactGroupBody,
} from '#schemas/contact';
import type { PageQuery } from '#schemas/common';

/**
 * Contacts kept in our own store: the address book and groups of Agent Accounts, and of mailboxes
 * whose provider has no contacts protocol of its own here (IMAP without CardDAV), plus the contacts
 * collected from their mail (shared/contacts/collect.ts). Groups nest by `parent_id`; a group's
 * `path` is its names from the top down. Address-book changes are committed with `contact.updated`
 * (creation included, as the contract has no contact.created) or `contact.deleted`; collection
 * from mail announces nothing (it follows every message).
 */

const NAME_FIELDS = ['given_name', 'middle_name', 'surname', 'nickname', 'company_name'] as const;

/** Digits of a phone number (what `phone_number` matches: spaces, dashes and brackets do not count). */
export const phoneDigits = (number: string) => number.replace(/\D/g, '');

/**
 * Whether two numbers' digits name the same phone: equal, or one ends with the other's national
 * part (trunk zeros dropped), so `030 1234-563` finds `+49 30 1234 563` and the other way round.
 */
export function samePhone(a: string, b: string): boolean {
  if (a === b) return true;
  const [shortA, shortB] = [a.replace(/^0+/, ''), b.replace(/^0+/, '')];
  return (shortB.length >= 6 && a.endsWith(shortB)) || (shortA.length >= 6 && b.endsWith(shortA));
}

export const inboxContactId = (grantId: GrantId, email: string) =>
  derivedId('contact', 0, `${grantId}\n${email.toLowerCase()}`);

function groupPaths(groups: readonly ContactGroupRecord[]): Map<string, string> {
  const byId = new Map(groups.map((g) => [g.id as string, g]));
  const paths = new Map<string, string>();
  const pathOf = (group: ContactGroupRecord, depth = 0): string => {
    const parent = group.parent_id ? byId.get(group.parent_id) : undefined;
    // A parent deleted since (or a cycle, which creation cannot make) ends the path.
    return parent && depth < 32 ? `${pathOf(parent, depth + 1)}/${group.name}` : group.name;
  };
  for (const group of groups) paths.set(group.id, pathOf(group));
  return paths;
}

export const groupView = (grant: GrantRecord, group: ContactGroupRecord, path: string): ContactGroup => ({
  id: group.id,
  object: 'contact_group',
  grant_id: grant.id,
  name: group.name,
  group_type: 'user',
  path,
});

/** The answer for a stored contact; `groups` (the grant's existing group IDs) drops deleted groups. */
export function contactView(grant: GrantRecord, record: ContactRecord, groups?: ReadonlySet<string>): Contact {
  const {
    id,
    source,
    group_ids,
    email_index: _e,
    phone_index: _p,
    seen_name: _s,
    version: _v,
    grant_id: _g,
    href: _h,
    etag: _t,
    vcard_uid: _u,
    created_at,
    updated_at,
    ...fields
  } = record;
  return {
    id,
    object: 'contact',
    grant_id: grant.id,
    source,
    ...fields,
    emails: record.emails ?? [],
    phone_numbers: record.phone_numbers ?? [],
    physical_addresses: record.physical_addresses ?? [],
    im_addresses: record.im_addresses ?? [],
    web_pages: record.web_pages ?? [],
    groups: group_ids.filter((g) => !groups || groups.has(g)).map((g) => ({ id: g })),
    created_at,
    updated_at,
  };
}

async function existingGroupIds(grantId: GrantId, records: readonly ContactRecord[]): Promise<Set<string> | undefined> {
  if (!records.some((r) => r.group_ids.length)) return undefined;
  return new Set((await db.allContactGroups(grantId)).map((g) => g.id));
}

function groupIdsOf(body: { groups?: readonly { id: string }[] }): ContactGroupId[] {
  const ids = (body.groups ?? []).map((ref, i) => {
    const id = parseId('contactGroup', ref.id);
    if (!id)
      throw new InvalidRequestError(
        `groups[${i}].id '${ref.id}' is not a contact group ID (GET /v3/grants/{grant_id}/contacts/groups lists them)`,
      );
    return id;
  });
  return [...new Set(ids)];
}

/** The record's searchable indexes, and its fields without the empty ones (an empty string clears a field). */
export function withIndexes(record: Omit<ContactRecord, 'email_index' | 'phone_index'>): ContactRecord {
  const cleaned = Object.fromEntries(
    Object.entries(record).filter(([, v]) => v !== '' && v !== undefined),
  ) as typeof record;
  return {
    ...cleaned,
    email_index: [...new Set((record.emails ?? []).map((e) => e.email.toLowerCase()))],
    phone_index: [...new Set((record.phone_numbers ?? []).map((p) => phoneDigits(p.number)).filter(Boolean))],
  };
}

export function checkIdentified(fields: CreateContactBody): void {
  const named = NAME_FIELDS.some((f) => (fields[f] ?? '').trim() !== '');
  if (!named && !fields.emails?.length && !fields.phone_numbers?.length) {
    throw new InvalidRequestError(
      'A contact needs a name (given_name, surname, middle_name, nickname or company_name), an email or a phone number',
    );
  }
}

const missingGroup = (error: unknown) =>
  error instanceof db.GroupMissingError
    ? new InvalidRequestError(`Contact group '${error.groupId}' does not exist in this grant`)
    : error;

const updated = (grant: GrantRecord, record: ContactRecord, groups?: ReadonlySet<string>) => ({
  notification: newNotification({
    type: 'contact.updated',
    applicationId: grant.application_id,
    grantId: grant.id,
    object: contactView(grant, record, groups),
  }),
});
const deleted = (grant: GrantRecord, record: ContactRecord) => ({
  notification: newNotification({
    type: 'contact.deleted',
    applicationId: grant.application_id,
    grantId: grant.id,
    object: contactView(grant, record),
  }),
});

/** Writes a contact (new, or the next version of `current`) with its contact.updated unless `quiet`; false when another writer came first. */
export async function storeContact(
  grant: GrantRecord,
  current: ContactRecord | undefined,
  next: ContactRecord,
  quiet: boolean,
  groups?: ReadonlySet<string>,
): Promise<boolean> {
  const outbox = quiet ? [] : [updated(grant, next, groups)];
  try {
    if (current) await db.replaceContact(current, next, outbox);
    else await db.insertContact(next, outbox);
    return true;
  } catch (error) {
    if (
      error instanceof db.ContactChangedError ||
      error instanceof TransactionConditionError ||
      error instanceof db.GroupMissingError
    )
      return false;
    throw error;
  }
}

/** Removes a contact with its contact.deleted unless `quiet`; false when another writer removed or changed it first. */
export const removeContact = (grant: GrantRecord, record: ContactRecord, quiet: boolean): Promise<boolean> =>
  db.deleteContact(record, quiet ? [] : [deleted(grant, record)]);

export async function requireContact(grant: GrantRecord, contactId: string): Promise<ContactRecord> {
  const id = parseId('contact', contactId);
  const record = id ? await db.getContact(grant.id, id) : undefined;
  if (!record) throw new NotFoundError(`Contact '${contactId}' not found`);
  return record;
}

async function requireGroup(
  grant: GrantRecord,
  groupId: string,
  groups?: readonly ContactGroupRecord[],
): Promise<ContactGroupRecord> {
  const id = parseId('contactGroup', groupId);
  const group = id ? (groups ?? (await db.allContactGroups(grant.id))).find((g) => g.id === id) : undefined;
  if (!group) throw new NotFoundError(`Contact group '${groupId}' not found`);
  return group;
}

/** A group and every group below it. */
function withSubgroups(group: ContactGroupRecord, groups: readonly ContactGroupRecord[]): Set<string> {
  const ids = new Set<string>([group.id]);
  for (let grew = true; grew;) {
    grew = false;
    for (const g of groups) if (g.parent_id && ids.has(g.parent_id) && !ids.has(g.id)) (ids.add(g.id), (grew = true));
  }
  return ids;
}

export async function listContacts(
  grant: GrantRecord,
  query: ListContactsQuery,
  limit: number,
): Promise<Page<Contact>> {
  const source = query.source ?? 'address_book';
  // Stored mailboxes have no domain directory (that is a provider's, such as a workspace's).
  if (source === 'domain') return { items: [] };
  const email = query.email?.trim().toLowerCase();
  const digits = query.phone_number !== undefined ? phoneDigits(query.phone_number) : undefined;
  if (digits === '') throw new InvalidRequestError(`phone_number '${query.phone_number}' has no digits`);
  let inGroups: Set<string> | undefined;
  if (query.group !== undefined) {
    const groups = await db.allContactGroups(grant.id);
    const group = await requireGroup(grant, query.group, groups);
    inGroups = query.recurse ? withSubgroups(group, groups) : new Set([group.id]);
  }
  const keep = (r: ContactRecord) =>
    (email === undefined || r.email_index.includes(email)) &&
    (digits === undefined || r.phone_index.some((p) => samePhone(p, digits))) &&
    (inGroups === undefined || r.group_ids.some((g) => inGroups.has(g)));
  // An inbox contact is found by its address directly (its ID is derived from it): one item, no pages.
  if (source === 'inbox' && email !== undefined) {
    if (query.page_token) decodeOffsetCursor(query.page_token, 'inbox-email');
    const found = (await db.getInboxContacts(grant.id, [inboxContactId(grant.id, email)])).filter(keep);
    return { items: found.map((r) => contactView(grant, r)) };
  }
  const pk = contactsOfGrant(grant.id, source);
  const after = query.page_token ? (decodeCursor(query.page_token, { pk }).sk as string) : undefined;
  const page = await db.pageOfContacts(grant.id, source, { limit, ...(after ? { after } : {}), keep });
  // Groups are read only when a contact of the page names one (a group deleted since is left out).
  const existing = await existingGroupIds(grant.id, page.items);
  return {
    items: page.items.map((r) => contactView(grant, r, existing)),
    nextCursor: page.last ? encodeCursor({ pk, sk: page.last }) : undefined,
  };
}

export async function getContact(grant: GrantRecord, contactId: string, _query: GetContactQuery): Promise<Contact> {
  const record = await requireContact(grant, contactId);
  // Stored contacts keep a picture as its URL only: there is no picture to add with profile_picture.
  return contactView(grant, record, await existingGroupIds(grant.id, [record]));
}

export async function createContact(grant: GrantRecord, body: CreateContactBody): Promise<Contact> {
  checkIdentified(body);
  const now = clock.nowSeconds();
  const { groups: _groups, ...fields } = body;
  const record = withIndexes({
    ...fields,
    id: newId('contact'),
    grant_id: grant.id,
    source: 'address_book',
    group_ids: groupIdsOf(body),
    created_at: now,
    updated_at: now,
    version: 1,
  });
  try {
    await db.insertContact(record, [updated(grant, record)]);
  } catch (error) {
    throw missingGroup(error);
  }
  return contactView(grant, record);
}

export async function updateContact(grant: GrantRecord, contactId: string, body: UpdateContactBody): Promise<Contact> {
  const current = await requireContact(grant, contactId);
  if (current.source !== 'address_book') {
    throw new InvalidRequestError(
      `Contact '${contactId}' was collected from mail (source ${current.source}) and cannot be changed; create it in the address book with POST /v3/grants/{grant_id}/contacts`,
    );
  }
  const { groups: _groups, ...fields } = body;
  const merged = { ...current, ...fields };
  checkIdentified(merged);
  const next = withIndexes({
    ...merged,
    group_ids: body.groups !== undefined ? groupIdsOf(body) : current.group_ids,
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  });
  const groups = await existingGroupIds(grant.id, [next]);
  // Groups deleted since the contact joined them leave with this change.
  if (body.groups === undefined && groups) next.group_ids = next.group_ids.filter((g) => groups.has(g));
  try {
    await db.replaceContact(current, next, [updated(grant, next, groups)]);
  } catch (error) {
    if (error instanceof db.ContactChangedError)
      throw new ConflictError('The contact was changed by another request; fetch it again and retry');
    throw missingGroup(error);
  }
  return contactView(grant, next, groups);
}

export async function deleteContact(grant: GrantRecord, contactId: string): Promise<void> {
  const record = await requireContact(grant, contactId);
  // A contact collected from mail is collected again by the next message that carries its address.
  if (!(await db.deleteContact(record, [deleted(grant, record)])))
    throw new ConflictError('The contact was changed by another request; fetch it again and retry');
}

export async function listContactGroups(
  grant: GrantRecord,
  query: PageQuery,
  limit: number,
): Promise<Page<ContactGroup>> {
  const groups = await db.allContactGroups(grant.id);
  const paths = groupPaths(groups);
  const all = groups
    .map((g) => groupView(grant, g, paths.get(g.id)!))
    .sort((a, b) => a.path.localeCompare(b.path) || a.id.localeCompare(b.id));
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, 'contact-groups') : 0;
  return {
    items: all.slice(offset, offset + limit),
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('contact-groups', offset + limit) : undefined,
  };
}

const nameTaken = (name: string) => new ConflictError(`A contact group named '${name}' already exists at this level`);

export async function createContactGroup(grant: GrantRecord, body: CreateContactGroupBody): Promise<ContactGroup> {
  const parentId = body.parent_id !== undefined ? parseId('contactGroup', body.parent_id) : undefined;
  if (body.parent_id !== undefined && !parentId)
    throw new InvalidRequestError(`parent_id '${body.parent_id}' is not a contact group ID`);
  const now = clock.nowSeconds();
  const group: ContactGroupRecord = {
    id: newId('contactGroup'),
    grant_id: grant.id,
    name: body.name.trim(),
    ...(parentId ? { parent_id: parentId } : {}),
    created_at: now,
    updated_at: now,
    version: 1,
  };
  try {
    await db.insertContactGroup(group);
  } catch (error) {
    if (error instanceof db.GroupNameTakenError) throw nameTaken(group.name);
    if (error instanceof db.GroupMissingError)
      throw new InvalidRequestError(`parent_id: contact group '${body.parent_id}' does not exist in this grant`);
    throw error;
  }
  const groups = await db.allContactGroups(grant.id);
  return groupView(
    grant,
    group,
    groupPaths(groups.some((g) => g.id === group.id) ? groups : [...groups, group]).get(group.id)!,
  );
}

export async function updateContactGroup(
  grant: GrantRecord,
  groupId: string,
  body: UpdateContactGroupBody,
): Promise<ContactGroup> {
  const groups = await db.allContactGroups(grant.id);
  const current = await requireGroup(grant, groupId, groups);
  const next: ContactGroupRecord = {
    ...current,
    name: body.name.trim(),
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  };
  try {
    if (!(await db.renameContactGroup(current, next)))
      throw new ConflictError('The contact group was changed by another request; fetch it again and retry');
  } catch (error) {
    if (error instanceof db.GroupNameTakenError) throw nameTaken(next.name);
    throw error;
  }
  return groupView(grant, next, groupPaths(groups.map((g) => (g.id === next.id ? next : g))).get(next.id)!);
}

export async function deleteContactGroup(grant: GrantRecord, groupId: string): Promise<void> {
  const groups = await db.allContactGroups(grant.id);
  const group = await requireGroup(grant, groupId, groups);
  const children = groups.filter((g) => g.parent_id === group.id);
  if (children.length)
    throw new InvalidRequestError(`Contact group '${groupId}' has ${children.length} subgroup(s); delete them first`);
  // Its contacts keep their other groups; answers leave the deleted one out, and their next change drops it.
  if (!(await db.deleteContactGroup(group)))
    throw new ConflictError('The contact group was changed by another request; fetch it again and retry');
}

export const storedContacts: ContactsProvider = {
  list: listContacts,
  get: getContact,
  create: createContact,
  update: updateContact,
  delete: deleteContact,
  listGroups: listContactGroups,
  createGroup: createContactGroup,
  updateGroup: updateContactGroup,
  deleteGroup: deleteContactGroup,
};
