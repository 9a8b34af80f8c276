import { randomUUID } from 'node:crypto';
import * as stored from '#shared/contacts/stored';
import type { ContactGroupRecord, ContactRecord } from '#shared/db/contacts';
import * as db from '#shared/db/contacts';
import type { GrantRecord } from '#shared/db/grants';
import { TransactionConditionError } from '#shared/db/transact';
import { DavError, PreconditionFailed, type DavClient } from '#shared/dav/client';
import { collectionChanges, type CollectionChanges } from '#shared/dav/changes';
import { MalformedVCard, parseVCard, writeContactVCard, writeGroupVCard, type ContactFields, type ParsedVCard } from '#shared/dav/vcard';
import { ApiError, ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { derivedId, parseId, type ContactGroupId, type ContactId, type GrantId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import type { ContactGroup, ContactsProvider } from '#shared/providers/contract';
import { clock } from '#shared/time';
import type { CreateContactBody, CreateContactGroupBody, UpdateContactBody, UpdateContactGroupBody } from '#schemas/contact';

/**
 * Contacts of a grant whose address book lives on a CardDAV server. The server is the truth: a sync
 * (RFC 6578, `syncAddressBook`) mirrors its vCards into the grant's stored address book, contacts
 * and groups alike, each with the href, ETag and UID of its vCard, and every read answers from those
 * records. Writes go to the server first, under ETag preconditions (If-None-Match on create,
 * If-Match on change and delete), and are stored once the server took them: a change another client
 * made first is never overwritten (the server's version is stored and the request answers 409).
 * Record IDs derive from the vCard's href, so the sync and the API agree on them. Groups are flat
 * (Apple's `X-ADDRESSBOOKSERVER-KIND:group` vCards, vCard 4 `KIND:group` read too); a contact's
 * groups are the groups whose member list names its UID. Contacts collected from mail (`inbox`)
 * stay stored-only, as in shared/contacts/stored.ts.
 */

export interface CardDavContext {
  grant: GrantRecord;
  client: DavClient;
  /** The address book collection's URL. */
  addressBook: string;
}

export interface AddressBookSyncResult {
  /** What the next sync starts from (none from a server without sync-collection). */
  token?: string;
  /** Contacts and groups written (new or changed, memberships included). */
  changed: number;
  /** Contacts and groups removed. */
  deleted: number;
  /** vCards that could not be read (left as they were stored, or not stored). */
  skipped: { url: string; reason: string }[];
}

const VCARD_TYPE = 'text/vcard; charset=utf-8';

export const cardDavContactId = (grantId: GrantId, href: string): ContactId => derivedId('contact', 0, `${grantId}\n${normalHref(href)}`);
export const cardDavGroupId = (grantId: GrantId, href: string): ContactGroupId => derivedId('contactGroup', 0, `${grantId}\n${normalHref(href)}`);

/** Hrefs as one string per resource: absolute, as URL normalises them. */
function normalHref(href: string): string {
  try {
    return new URL(href).href;
  } catch {
    return href;
  }
}

const collectionUrl = (url: string) => (url.endsWith('/') ? url : `${url}/`);

// ---------------------------------------------------------------------------------------------
// Records and views

/** The answer for a record (stored.ts's view leaves out the CardDAV bookkeeping: href, ETag, UID). */
const view = stored.contactView;
/** CardDAV groups are flat: a group's path is its name. */
const groupView = (grant: GrantRecord, group: ContactGroupRecord): ContactGroup => stored.groupView(grant, group, group.name);

const updatedEntry = (grant: GrantRecord, record: ContactRecord, groups?: ReadonlySet<string>) => ({
  notification: newNotification({ type: 'contact.updated', applicationId: grant.application_id, grantId: grant.id, object: view(grant, record, groups) }),
});
const deletedEntry = (grant: GrantRecord, record: ContactRecord) => ({
  notification: newNotification({ type: 'contact.deleted', applicationId: grant.application_id, grantId: grant.id, object: view(grant, record) }),
});

/** The vCard fields of a record (what writeContactVCard writes). */
function fieldsOf(record: ContactRecord): ContactFields {
  const {
    id: _id,
    grant_id: _g,
    source: _s,
    group_ids: _gi,
    email_index: _e,
    phone_index: _p,
    seen_name: _sn,
    href: _h,
    etag: _et,
    vcard_uid: _u,
    created_at: _c,
    updated_at: _up,
    version: _v,
    ...fields
  } = record;
  return fields as ContactFields;
}

/** The groups whose members name `uid`, in a stable order. */
function groupIdsOf(uid: string | undefined, groups: readonly ContactGroupRecord[]): ContactGroupId[] {
  if (uid === undefined) return [];
  return groups
    .filter((g) => g.member_uids?.includes(uid))
    .map((g) => g.id)
    .sort();
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().every((value, i) => value === [...b].sort()[i]);

function contactRecordOf(
  grantId: GrantId,
  href: string,
  etag: string | undefined,
  parsed: Extract<ParsedVCard, { kind: 'individual' }>,
  previous: ContactRecord | undefined,
  groups: readonly ContactGroupRecord[],
): ContactRecord {
  const now = clock.nowSeconds();
  return stored.withIndexes({
    ...(parsed.fields as Omit<ContactRecord, 'id'>),
    id: cardDavContactId(grantId, href),
    grant_id: grantId,
    source: 'address_book',
    group_ids: groupIdsOf(parsed.uid, groups),
    href: normalHref(href),
    ...(etag !== undefined ? { etag } : {}),
    vcard_uid: parsed.uid,
    created_at: previous?.created_at ?? now,
    updated_at: now,
    version: (previous?.version ?? 0) + 1,
  });
}

function groupRecordOf(grantId: GrantId, href: string, etag: string | undefined, parsed: Extract<ParsedVCard, { kind: 'group' }>, previous: ContactGroupRecord | undefined): ContactGroupRecord {
  const now = clock.nowSeconds();
  return {
    id: cardDavGroupId(grantId, href),
    grant_id: grantId,
    name: parsed.name.trim() || parsed.uid,
    href: normalHref(href),
    ...(etag !== undefined ? { etag } : {}),
    vcard_uid: parsed.uid,
    member_uids: [...new Set(parsed.members)],
    created_at: previous?.created_at ?? now,
    updated_at: now,
    version: (previous?.version ?? 0) + 1,
  };
}

/** Writes a contact (new or next version) with its notification; false when another writer came first. */
async function storeContact(grant: GrantRecord, current: ContactRecord | undefined, next: ContactRecord, quiet: boolean, groups?: ReadonlySet<string>): Promise<boolean> {
  const outbox = quiet ? [] : [updatedEntry(grant, next, groups)];
  try {
    if (current) await db.replaceContact(current, next, outbox);
    else await db.insertContact(next, outbox);
    return true;
  } catch (error) {
    if (error instanceof db.ContactChangedError || error instanceof TransactionConditionError || error instanceof db.GroupMissingError) return false;
    throw error;
  }
}

async function removeContact(grant: GrantRecord, record: ContactRecord, quiet: boolean): Promise<boolean> {
  return db.deleteContact(record, quiet ? [] : [deletedEntry(grant, record)]);
}

// ---------------------------------------------------------------------------------------------
// Sync

/** What changed in the address book since `token` (shared/dav/changes.ts), by normalised href. */
async function remoteChanges(ctx: CardDavContext, token: string | undefined): Promise<CollectionChanges> {
  const changes = await collectionChanges(ctx.client, collectionUrl(ctx.addressBook), token);
  return { ...changes, changed: new Map([...changes.changed].map(([url, etag]) => [normalHref(url), etag])), deleted: new Set([...changes.deleted].map(normalHref)) };
}

/**
 * Mirrors the address book into the grant's stored contacts and groups: from `state.token` (none: the
 * first sync, every member), falling back to a full listing when the server no longer knows the
 * token. Only vCards whose ETag differs from the stored one are fetched (multiget) and written;
 * running the same sync again writes nothing. Each contact is written with its `contact.updated` /
 * `contact.deleted` in one transaction, unless `quiet` (the grant's first sync: history, not news).
 * A vCard that cannot be read is reported in `skipped` and left as stored. Server failures reject
 * with the client's DavError (the caller's run retries).
 */
export async function syncAddressBook(ctx: CardDavContext, state: { token?: string }, options: { quiet?: boolean } = {}): Promise<AddressBookSyncResult> {
  const { grant } = ctx;
  const quiet = options.quiet ?? false;
  const book = collectionUrl(ctx.addressBook);
  const remote = await remoteChanges(ctx, state.token);
  const [contacts, groups] = await Promise.all([db.allContacts(grant.id, 'address_book'), db.allContactGroups(grant.id)]);
  const contactsByHref = new Map(contacts.filter((c) => c.href).map((c) => [c.href!, c]));
  const groupsByHref = new Map(groups.filter((g) => g.href).map((g) => [g.href!, g]));
  const result: AddressBookSyncResult = { ...(remote.token !== undefined ? { token: remote.token } : {}), changed: 0, deleted: 0, skipped: [] };

  const gone = new Set(remote.deleted);
  if (remote.full) {
    // Only what lives in this address book (its hrefs are under the collection's URL).
    for (const href of [...contactsByHref.keys(), ...groupsByHref.keys()]) if (href.startsWith(normalHref(book)) && !remote.changed.has(href)) gone.add(href);
  }
  const toFetch = [...remote.changed].filter(([href, etag]) => {
    const known = contactsByHref.get(href) ?? groupsByHref.get(href);
    return !known || etag === undefined || known.etag !== etag;
  });
  const fetched = toFetch.length
    ? await ctx.client.multiget(
        book,
        toFetch.map(([href]) => href),
        'addressbook',
      )
    : [];

  const parsedContacts: { href: string; etag: string | undefined; card: Extract<ParsedVCard, { kind: 'individual' }> }[] = [];
  const nextGroups = new Map(groups.map((g) => [g.id as string, g]));
  const groupWrites: { current: ContactGroupRecord | undefined; next: ContactGroupRecord }[] = [];
  for (const object of fetched) {
    const href = normalHref(object.url);
    const etag = object.etag ?? remote.changed.get(href);
    let card: ParsedVCard;
    try {
      card = parseVCard(object.data, { fallbackUid: href });
    } catch (error) {
      if (!(error instanceof MalformedVCard)) throw error;
      result.skipped.push({ url: href, reason: error.message });
      continue;
    }
    if (card.kind === 'group') {
      const current = groupsByHref.get(href);
      if (current && current.etag === etag && etag !== undefined) continue;
      const next = groupRecordOf(grant.id, href, etag, card, current);
      nextGroups.set(next.id, next);
      groupWrites.push({ current, next });
      // A contact's vCard turned into a group: the contact goes.
      if (contactsByHref.has(href)) gone.add(href);
    } else {
      parsedContacts.push({ href, etag, card });
      if (groupsByHref.has(href)) gone.add(href);
    }
  }
  for (const href of gone) {
    const group = groupsByHref.get(href);
    if (group && !groupWrites.some((w) => w.next.id === group.id)) nextGroups.delete(group.id);
  }
  const finalGroups = [...nextGroups.values()];
  const existing = new Set(finalGroups.map((g) => g.id as string));

  // Groups first: contacts' writes check their groups exist.
  for (const { current, next } of groupWrites) if (await db.putSyncedContactGroup(next, current)) result.changed++;

  const written = new Set<string>();
  for (const { href, etag, card } of parsedContacts) {
    const current = contactsByHref.get(href);
    const next = contactRecordOf(grant.id, href, etag, card, current, finalGroups);
    if (await storeContact(grant, current, next, quiet, existing)) result.changed++;
    written.add(href);
  }
  // Memberships changed by a group's vCard (the contact's own vCard unchanged).
  for (const contact of contacts) {
    if (!contact.href || written.has(contact.href) || gone.has(contact.href)) continue;
    const groupIds = groupIdsOf(contact.vcard_uid, finalGroups);
    if (sameList(groupIds, contact.group_ids)) continue;
    const next: ContactRecord = { ...contact, group_ids: groupIds, updated_at: clock.nowSeconds(), version: contact.version + 1 };
    if (await storeContact(grant, contact, next, quiet, existing)) result.changed++;
  }
  for (const href of gone) {
    const contact = contactsByHref.get(href);
    if (contact && (await removeContact(grant, contact, quiet))) result.deleted++;
    const group = groupsByHref.get(href);
    if (group && !groupWrites.some((w) => w.next.id === group.id) && (await db.removeSyncedContactGroup(group))) result.deleted++;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// The provider

/** A DAV failure of a request as the API answers it (412s are handled where they happen). */
function serverError(error: unknown): unknown {
  if (!(error instanceof DavError)) return error;
  const host = (() => {
    try {
      return new URL(error.url).host;
    } catch {
      return 'the CardDAV server';
    }
  })();
  switch (error.kind) {
    case 'precondition_failed':
      return new ConflictError('The contact changed on the server by another client; fetch it again');
    case 'not_found':
      return new NotFoundError(`${host} no longer has it: ${error.message}`);
    case 'conflict':
      return new InvalidRequestError(`${host} refused the change: ${error.message}`, { cause: error });
    case 'unauthorized':
      return new ApiError(503, `${host} refused the grant's credentials (${error.message}); reconnect the grant`, { cause: error, expose: true });
    default:
      return new ApiError(503, `The grant's CardDAV server is not available (${error.message}); try again later`, { cause: error, expose: true });
  }
}

async function onServer<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof PreconditionFailed) throw error;
    throw serverError(error);
  }
}

const changedOnServer = (what: string) => new ConflictError(`The ${what} was changed on the server by another client; fetch it again`);

function requestedGroups(body: { groups?: readonly { id: string }[] }, groups: readonly ContactGroupRecord[]): ContactGroupRecord[] {
  const chosen = new Map<string, ContactGroupRecord>();
  (body.groups ?? []).forEach((ref, i) => {
    const id = parseId('contactGroup', ref.id);
    if (!id) throw new InvalidRequestError(`groups[${i}].id '${ref.id}' is not a contact group ID (GET /v3/grants/{grant_id}/contacts/groups lists them)`);
    const group = groups.find((g) => g.id === id && g.href);
    if (!group) throw new InvalidRequestError(`Contact group '${ref.id}' does not exist in this grant`);
    chosen.set(id, group);
  });
  return [...chosen.values()];
}

function vcardOfContact(uid: string, fields: ContactFields): string {
  try {
    return writeContactVCard(uid, fields);
  } catch (error) {
    if (error instanceof MalformedVCard) throw new InvalidRequestError(error.message);
    throw error;
  }
}

/**
 * The server's version of a contact after a 412, stored with its notification: the record now
 * (undefined when the server no longer has it, and the record is removed).
 */
async function refreshContact(ctx: CardDavContext, record: ContactRecord): Promise<ContactRecord | undefined> {
  let object;
  try {
    object = await ctx.client.getObject(record.href!);
  } catch (error) {
    if (error instanceof DavError && error.kind === 'not_found') {
      await removeContact(ctx.grant, record, false);
      return undefined;
    }
    throw serverError(error);
  }
  let card: ParsedVCard;
  try {
    card = parseVCard(object.data, { fallbackUid: record.href! });
  } catch (error) {
    if (error instanceof MalformedVCard) return record;
    throw error;
  }
  if (card.kind !== 'individual' || (object.etag !== undefined && object.etag === record.etag)) return record;
  const groups = await db.allContactGroups(ctx.grant.id);
  const next = contactRecordOf(ctx.grant.id, record.href!, object.etag, card, record, groups);
  return (await storeContact(ctx.grant, record, next, false, new Set(groups.map((g) => g.id)))) ? next : record;
}

/** The server's version of a group after a 412, stored (removed when the server no longer has it). */
async function refreshGroup(ctx: CardDavContext, group: ContactGroupRecord): Promise<void> {
  let object;
  try {
    object = await ctx.client.getObject(group.href!);
  } catch (error) {
    if (error instanceof DavError && error.kind === 'not_found') {
      await db.removeSyncedContactGroup(group);
      return;
    }
    throw serverError(error);
  }
  let card: ParsedVCard;
  try {
    card = parseVCard(object.data, { fallbackUid: group.href! });
  } catch (error) {
    if (error instanceof MalformedVCard) return;
    throw error;
  }
  if (card.kind === 'group') await db.putSyncedContactGroup(groupRecordOf(ctx.grant.id, group.href!, object.etag, card, group), group);
}

/**
 * Adds `uid` to or removes it from groups' member lists on the server (If-Match each), then stores
 * them. A group changed by another client meanwhile is re-read and stored as the server has it, and
 * left out: the IDs of those groups are returned.
 */
async function changeMemberships(ctx: CardDavContext, uid: string, join: readonly ContactGroupRecord[], leave: readonly ContactGroupRecord[]): Promise<ContactGroupRecord[]> {
  const conflicts: ContactGroupRecord[] = [];
  const changes = [...join.map((group) => ({ group, add: true })), ...leave.map((group) => ({ group, add: false }))];
  for (const { group, add } of changes) {
    const members = new Set(group.member_uids ?? []);
    if (add === members.has(uid)) continue;
    if (add) members.add(uid);
    else members.delete(uid);
    try {
      if (!group.etag) throw new PreconditionFailed('no ETag stored', group.href!);
      const etag = await onServer(() => ctx.client.putObject(group.href!, writeGroupVCard(group.vcard_uid!, group.name, [...members]), VCARD_TYPE, { etag: group.etag! }));
      const next: ContactGroupRecord = { ...group, member_uids: [...members], ...(etag ? { etag } : {}), updated_at: clock.nowSeconds(), version: group.version + 1 };
      if (!etag) delete next.etag;
      await db.putSyncedContactGroup(next, group);
    } catch (error) {
      if (!(error instanceof PreconditionFailed)) throw error;
      await refreshGroup(ctx, group);
      conflicts.push(group);
    }
  }
  return conflicts;
}

/** Re-derives a contact's groups from the stored groups' member lists, storing the change if any. */
async function alignGroups(ctx: CardDavContext, record: ContactRecord): Promise<ContactRecord> {
  const groups = await db.allContactGroups(ctx.grant.id);
  const groupIds = groupIdsOf(record.vcard_uid, groups);
  if (sameList(groupIds, record.group_ids)) return record;
  const next: ContactRecord = { ...record, group_ids: groupIds, updated_at: clock.nowSeconds(), version: record.version + 1 };
  return (await storeContact(ctx.grant, record, next, false, new Set(groups.map((g) => g.id)))) ? next : record;
}

async function requireGroup(grant: GrantRecord, groupId: string): Promise<{ group: ContactGroupRecord; groups: ContactGroupRecord[] }> {
  const id = parseId('contactGroup', groupId);
  const groups = await db.allContactGroups(grant.id);
  const group = id ? groups.find((g) => g.id === id) : undefined;
  if (!group) throw new NotFoundError(`Contact group '${groupId}' not found`);
  return { group, groups };
}

/** Whether a record is a mirrored vCard (not an inbox contact or a contact stored before CardDAV). */
const onCardDav = (record: ContactRecord) => record.source === 'address_book' && record.href !== undefined && record.vcard_uid !== undefined;

export function cardDavContacts(contextOf: (grant: GrantRecord) => Promise<CardDavContext>): ContactsProvider {
  return {
    // Reads answer from the mirrored records, as stored contacts do.
    list: stored.listContacts,
    get: stored.getContact,

    async create(grant, body: CreateContactBody) {
      stored.checkIdentified(body);
      const groups = await db.allContactGroups(grant.id);
      const join = requestedGroups(body, groups);
      const ctx = await contextOf(grant);
      const uid = randomUUID();
      const href = normalHref(new URL(`${uid}.vcf`, collectionUrl(ctx.addressBook)).href);
      const { groups: _groups, ...fields } = body;
      let etag: string | undefined;
      try {
        etag = await onServer(() => ctx.client.putObject(href, vcardOfContact(uid, fields as ContactFields), VCARD_TYPE, { create: true }));
      } catch (error) {
        // A fresh UUID taken already: nothing of ours was written.
        if (error instanceof PreconditionFailed) throw new ConflictError("The server already has a contact at the new contact's URL; try again");
        throw error;
      }
      const conflicts = await changeMemberships(ctx, uid, join, []);
      const now = clock.nowSeconds();
      const after = conflicts.length ? await db.allContactGroups(grant.id) : groups;
      const record = stored.withIndexes({
        ...(fields as Omit<ContactRecord, 'id'>),
        id: cardDavContactId(grant.id, href),
        grant_id: grant.id,
        source: 'address_book',
        group_ids: join.filter((g) => !conflicts.includes(g)).map((g) => g.id),
        href,
        ...(etag ? { etag } : {}),
        vcard_uid: uid,
        created_at: now,
        updated_at: now,
        version: 1,
      });
      if (!(await storeContact(grant, undefined, record, false))) {
        // A sync stored it first (it saw the new vCard): that record answers.
        const synced = await db.getContact(grant.id, record.id);
        if (synced) return view(grant, synced, new Set(after.map((g) => g.id)));
        throw new ConflictError('The contact was stored by another request meanwhile; fetch it again');
      }
      return view(grant, record, new Set(after.map((g) => g.id)));
    },

    async update(grant, contactId, body: UpdateContactBody) {
      const current = await stored.requireContact(grant, contactId);
      if (!onCardDav(current)) return stored.updateContact(grant, contactId, body);
      const groups = await db.allContactGroups(grant.id);
      const existing = new Set(groups.map((g) => g.id as string));
      const join = body.groups !== undefined ? requestedGroups(body, groups) : undefined;
      const { groups: _groups, ...fields } = body;
      const merged = { ...current, ...fields } as ContactRecord;
      stored.checkIdentified(merged);
      const ctx = await contextOf(grant);
      const draft = stored.withIndexes({ ...merged, updated_at: clock.nowSeconds(), version: current.version + 1 });
      let etag: string | undefined;
      try {
        if (!current.etag) throw new PreconditionFailed('no ETag stored', current.href!);
        etag = await onServer(() => ctx.client.putObject(current.href!, vcardOfContact(current.vcard_uid!, fieldsOf(draft)), VCARD_TYPE, { etag: current.etag! }));
      } catch (error) {
        if (!(error instanceof PreconditionFailed)) throw error;
        const now = await refreshContact(ctx, current);
        if (!now) throw new NotFoundError(`Contact '${contactId}' was deleted on the server by another client`);
        throw changedOnServer('contact');
      }
      const next: ContactRecord = { ...draft, ...(etag ? { etag } : {}) };
      if (!etag) delete next.etag;
      let conflicts: ContactGroupRecord[] = [];
      if (join) {
        const joinIds = new Set(join.map((g) => g.id as string));
        const leave = groups.filter((g) => g.href && g.member_uids?.includes(current.vcard_uid!) && !joinIds.has(g.id));
        conflicts = await changeMemberships(ctx, current.vcard_uid!, join, leave);
      }
      const after = join ? await db.allContactGroups(grant.id) : groups;
      next.group_ids = groupIdsOf(current.vcard_uid, after);
      if (!(await storeContact(grant, current, next, false, existing))) {
        // A sync stored the server's version meanwhile; that is ours when its ETag is.
        const synced = await db.getContact(grant.id, current.id);
        if (!synced || synced.etag !== next.etag) throw new ConflictError('The contact was changed by another request; fetch it again and retry');
        return view(grant, await alignGroups(ctx, synced), new Set(after.map((g) => g.id)));
      }
      if (conflicts.length) {
        await alignGroups(ctx, next);
        throw new ConflictError(`The contact was saved, but its group(s) ${conflicts.map((g) => `'${g.name}'`).join(', ')} changed on the server by another client; fetch them again`);
      }
      return view(grant, next, new Set(after.map((g) => g.id)));
    },

    async delete(grant, contactId) {
      const current = await stored.requireContact(grant, contactId);
      if (!onCardDav(current)) return stored.deleteContact(grant, contactId);
      const ctx = await contextOf(grant);
      try {
        if (!current.etag) throw new PreconditionFailed('no ETag stored', current.href!);
        await onServer(() => ctx.client.deleteObject(current.href!, current.etag));
      } catch (error) {
        // Gone from the server already: it goes from here too.
        if (!(error instanceof NotFoundError) && !(error instanceof PreconditionFailed)) throw error;
        if (error instanceof PreconditionFailed) {
          const now = await refreshContact(ctx, current);
          if (!now) return;
          throw changedOnServer('contact');
        }
      }
      // False: a sync removed it meanwhile (with its notification).
      await removeContact(grant, current, false);
    },

    listGroups: stored.listContactGroups,

    async createGroup(grant, body: CreateContactGroupBody) {
      if (body.parent_id !== undefined) throw new InvalidRequestError('parent_id: contact groups of a CardDAV address book do not nest; leave parent_id out');
      const name = body.name.trim();
      const groups = await db.allContactGroups(grant.id);
      if (groups.some((g) => g.name.trim().toLowerCase() === name.toLowerCase())) throw new ConflictError(`A contact group named '${name}' already exists`);
      const ctx = await contextOf(grant);
      const uid = randomUUID();
      const href = normalHref(new URL(`${uid}.vcf`, collectionUrl(ctx.addressBook)).href);
      let etag: string | undefined;
      try {
        etag = await onServer(() => ctx.client.putObject(href, writeGroupVCard(uid, name, []), VCARD_TYPE, { create: true }));
      } catch (error) {
        if (error instanceof PreconditionFailed) throw new ConflictError("The server already has a vCard at the new group's URL; try again");
        throw error;
      }
      const now = clock.nowSeconds();
      const group: ContactGroupRecord = {
        id: cardDavGroupId(grant.id, href),
        grant_id: grant.id,
        name,
        href,
        ...(etag ? { etag } : {}),
        vcard_uid: uid,
        member_uids: [],
        created_at: now,
        updated_at: now,
        version: 1,
      };
      // False: a sync stored it first, which is the same group.
      await db.putSyncedContactGroup(group, undefined);
      return groupView(grant, group);
    },

    async updateGroup(grant, groupId, body: UpdateContactGroupBody) {
      const { group, groups } = await requireGroup(grant, groupId);
      const name = body.name.trim();
      if (!group.href || !group.vcard_uid) throw new InvalidRequestError(`Contact group '${groupId}' is not on the CardDAV server and cannot be renamed`);
      if (groups.some((g) => g.id !== group.id && g.name.trim().toLowerCase() === name.toLowerCase())) throw new ConflictError(`A contact group named '${name}' already exists`);
      const ctx = await contextOf(grant);
      let etag: string | undefined;
      try {
        if (!group.etag) throw new PreconditionFailed('no ETag stored', group.href);
        etag = await onServer(() => ctx.client.putObject(group.href!, writeGroupVCard(group.vcard_uid!, name, group.member_uids ?? []), VCARD_TYPE, { etag: group.etag! }));
      } catch (error) {
        if (!(error instanceof PreconditionFailed)) throw error;
        await refreshGroup(ctx, group);
        throw changedOnServer('contact group');
      }
      const next: ContactGroupRecord = { ...group, name, ...(etag ? { etag } : {}), updated_at: clock.nowSeconds(), version: group.version + 1 };
      if (!etag) delete next.etag;
      if (!(await db.putSyncedContactGroup(next, group))) throw new ConflictError('The contact group was changed by another request; fetch it again and retry');
      return groupView(grant, next);
    },

    async deleteGroup(grant, groupId) {
      const { group } = await requireGroup(grant, groupId);
      if (!group.href) throw new InvalidRequestError(`Contact group '${groupId}' is not on the CardDAV server and cannot be deleted here`);
      const ctx = await contextOf(grant);
      try {
        if (!group.etag) throw new PreconditionFailed('no ETag stored', group.href);
        await onServer(() => ctx.client.deleteObject(group.href!, group.etag));
      } catch (error) {
        if (error instanceof PreconditionFailed) {
          await refreshGroup(ctx, group);
          throw changedOnServer('contact group');
        }
        if (!(error instanceof NotFoundError)) throw error;
      }
      await db.removeSyncedContactGroup(group);
      // Its members leave it now (with their contact.updated), not at the next sync.
      const members = (await db.allContacts(grant.id, 'address_book')).filter((c) => c.group_ids.includes(group.id));
      for (const member of members) await alignGroups(ctx, member);
    },
  };
}
