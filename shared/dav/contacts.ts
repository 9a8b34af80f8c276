import { randomUUID } from 'node:crypto';
import { contactsWith, memberGroupIds, sameIds } from '#shared/contacts/server-backed';
import * as stored from '#shared/contacts/stored';
import type { ContactGroupRecord, ContactRecord } from '#shared/db/contacts';
import * as db from '#shared/db/contacts';
import type { GrantRecord } from '#shared/db/grants';
import { DavError, PreconditionFailed, type DavClient } from '#shared/dav/client';
import { collectionChanges, type CollectionChanges } from '#shared/dav/changes';
import {
  MalformedVCard,
  parseVCard,
  writeContactVCard,
  writeGroupVCard,
  type ContactFields,
  type ParsedVCard,
} from '#shared/dav/vcard';
import { ApiError, ChangedOnServerError, ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { derivedId, type ContactGroupId, type ContactId, type GrantId } from '#shared/ids';
import type { ContactServer, ContactsProvider } from '#shared/providers/contract';
import { clock } from '#shared/time';

/**
 * Contacts of a grant whose address book lives on a CardDAV server. The server is the truth: a sync
 * (RFC 6578, `syncAddressBook`) mirrors its vCards into the grant's stored address book, contacts
 * and groups alike, each with the href, ETag and UID of its vCard, and every read answers from those
 * records. Writes go to the server first through the ContactServer port (`cardDavServer` below:
 * If-None-Match on create, If-Match on change and delete), then are stored by the stored contacts'
 * flow for a server (shared/contacts/server-backed.ts): a change another client made first is never
 * overwritten (the server's version is stored and the request answers 409).
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

export const cardDavContactId = (grantId: GrantId, href: string): ContactId =>
  derivedId('contact', 0, `${grantId}\n${normalHref(href)}`);
export const cardDavGroupId = (grantId: GrantId, href: string): ContactGroupId =>
  derivedId('contactGroup', 0, `${grantId}\n${normalHref(href)}`);

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
    group_ids: memberGroupIds(parsed.uid, groups),
    href: normalHref(href),
    ...(etag !== undefined ? { etag } : {}),
    vcard_uid: parsed.uid,
    created_at: previous?.created_at ?? now,
    updated_at: now,
    version: (previous?.version ?? 0) + 1,
  });
}

function groupRecordOf(
  grantId: GrantId,
  href: string,
  etag: string | undefined,
  parsed: Extract<ParsedVCard, { kind: 'group' }>,
  previous: ContactGroupRecord | undefined,
): ContactGroupRecord {
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

// ---------------------------------------------------------------------------------------------
// Sync

/** What changed in the address book since `token` (shared/dav/changes.ts), by normalised href. */
async function remoteChanges(ctx: CardDavContext, token: string | undefined): Promise<CollectionChanges> {
  const changes = await collectionChanges(ctx.client, collectionUrl(ctx.addressBook), token);
  return {
    ...changes,
    changed: new Map([...changes.changed].map(([url, etag]) => [normalHref(url), etag])),
    deleted: new Set([...changes.deleted].map(normalHref)),
  };
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
export async function syncAddressBook(
  ctx: CardDavContext,
  state: { token?: string },
  options: { quiet?: boolean } = {},
): Promise<AddressBookSyncResult> {
  const { grant } = ctx;
  const quiet = options.quiet ?? false;
  const book = collectionUrl(ctx.addressBook);
  const remote = await remoteChanges(ctx, state.token);
  const [contacts, groups] = await Promise.all([
    db.allContacts(grant.id, 'address_book'),
    db.allContactGroups(grant.id),
  ]);
  const contactsByHref = new Map(contacts.filter((c) => c.href).map((c) => [c.href!, c]));
  const groupsByHref = new Map(groups.filter((g) => g.href).map((g) => [g.href!, g]));
  const result: AddressBookSyncResult = {
    ...(remote.token !== undefined ? { token: remote.token } : {}),
    changed: 0,
    deleted: 0,
    skipped: [],
  };

  const gone = new Set(remote.deleted);
  if (remote.full) {
    // Only what lives in this address book (its hrefs are under the collection's URL).
    for (const href of [...contactsByHref.keys(), ...groupsByHref.keys()])
      if (href.startsWith(normalHref(book)) && !remote.changed.has(href)) gone.add(href);
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

  const parsedContacts: {
    href: string;
    etag: string | undefined;
    card: Extract<ParsedVCard, { kind: 'individual' }>;
  }[] = [];
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
    if (await stored.storeContact(grant, current, next, quiet, existing)) result.changed++;
    written.add(href);
  }
  // Memberships changed by a group's vCard (the contact's own vCard unchanged).
  for (const contact of contacts) {
    if (!contact.href || written.has(contact.href) || gone.has(contact.href)) continue;
    const groupIds = memberGroupIds(contact.vcard_uid, finalGroups);
    if (sameIds(groupIds, contact.group_ids)) continue;
    const next: ContactRecord = {
      ...contact,
      group_ids: groupIds,
      updated_at: clock.nowSeconds(),
      version: contact.version + 1,
    };
    if (await stored.storeContact(grant, contact, next, quiet, existing)) result.changed++;
  }
  for (const href of gone) {
    const contact = contactsByHref.get(href);
    if (contact && (await stored.removeContact(grant, contact, quiet))) result.deleted++;
    const group = groupsByHref.get(href);
    if (group && !groupWrites.some((w) => w.next.id === group.id) && (await db.removeSyncedContactGroup(group)))
      result.deleted++;
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
      return new ApiError(503, `${host} refused the grant's credentials (${error.message}); reconnect the grant`, {
        cause: error,
        expose: true,
      });
    default:
      return new ApiError(503, `The grant's CardDAV server is not available (${error.message}); try again later`, {
        cause: error,
        expose: true,
      });
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

function vcardOfContact(uid: string, fields: ContactFields): string {
  try {
    return writeContactVCard(uid, fields);
  } catch (error) {
    if (error instanceof MalformedVCard) throw new InvalidRequestError(error.message);
    throw error;
  }
}

/** A write under an ETag (`what` names the object): a 412, or no ETag stored to write under, is ChangedOnServerError. */
async function conditional<T>(what: string, etag: string | undefined, write: (etag: string) => Promise<T>): Promise<T> {
  if (!etag) throw new ChangedOnServerError(what);
  try {
    return await onServer(() => write(etag));
  } catch (error) {
    if (error instanceof PreconditionFailed) throw new ChangedOnServerError(what);
    throw error;
  }
}

/** A delete under an ETag: one the server no longer has is deleted. */
async function conditionalDelete(
  what: string,
  href: string,
  etag: string | undefined,
  client: DavClient,
): Promise<void> {
  try {
    await conditional(what, etag, (tag) => client.deleteObject(href, tag));
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
  }
}

/** The object at `href` now: undefined when the server no longer has it, its vCard otherwise (undefined `card` when unreadable). */
async function readBack(
  ctx: CardDavContext,
  href: string,
): Promise<{ etag: string | undefined; card?: ParsedVCard } | undefined> {
  let object;
  try {
    object = await ctx.client.getObject(href);
  } catch (error) {
    if (error instanceof DavError && error.kind === 'not_found') return undefined;
    throw serverError(error);
  }
  try {
    return { etag: object.etag, card: parseVCard(object.data, { fallbackUid: href }) };
  } catch (error) {
    if (error instanceof MalformedVCard) return { etag: object.etag };
    throw error;
  }
}

/**
 * The CardDAV address book as a ContactServer port: new contacts and groups are PUT with
 * If-None-Match under a fresh UUID's URL in the address book, changes and deletes under If-Match of
 * the ETag last read, groups as Apple group vCards listing their members' UIDs. A grant's context (its
 * client and address book) is made once per request.
 */
export function cardDavServer(contextOf: (grant: GrantRecord) => Promise<CardDavContext>): ContactServer {
  const contexts = new WeakMap<GrantRecord, Promise<CardDavContext>>();
  const context = (grant: GrantRecord) => {
    let ctx = contexts.get(grant);
    if (!ctx) contexts.set(grant, (ctx = contextOf(grant)));
    return ctx;
  };
  /** A new vCard under a fresh UUID's URL in the address book. */
  async function put(grant: GrantRecord, what: string, vcard: (uid: string) => string) {
    const ctx = await context(grant);
    const uid = randomUUID();
    const href = normalHref(new URL(`${uid}.vcf`, collectionUrl(ctx.addressBook)).href);
    const body = vcard(uid);
    try {
      return { uid, href, etag: await onServer(() => ctx.client.putObject(href, body, VCARD_TYPE, { create: true })) };
    } catch (error) {
      // A fresh UUID taken already: nothing of ours was written.
      if (error instanceof PreconditionFailed)
        throw new ConflictError(`The server already has a vCard at the new ${what}'s URL; try again`);
      throw error;
    }
  }

  return {
    flatGroups: 'parent_id: contact groups of a CardDAV address book do not nest; leave parent_id out',
    holds: (record) => record.href !== undefined && record.vcard_uid !== undefined,

    async createContact(grant, fields) {
      const { uid, href, etag } = await put(grant, 'contact', (u) => vcardOfContact(u, fields as ContactFields));
      return { id: cardDavContactId(grant.id, href), href, etag, vcard_uid: uid };
    },
    async updateContact(grant, contact, fields) {
      const ctx = await context(grant);
      return conditional('contact', contact.etag, (etag) =>
        ctx.client.putObject(contact.href!, vcardOfContact(contact.vcard_uid!, fields as ContactFields), VCARD_TYPE, {
          etag,
        }),
      );
    },
    async deleteContact(grant, contact) {
      await conditionalDelete('contact', contact.href!, contact.etag, (await context(grant)).client);
    },
    async createGroup(grant, name) {
      const { uid, href, etag } = await put(grant, 'group', (u) => writeGroupVCard(u, name, []));
      return { id: cardDavGroupId(grant.id, href), href, etag, vcard_uid: uid };
    },
    async updateGroup(grant, group, name, members) {
      const ctx = await context(grant);
      return conditional('contact group', group.etag, (etag) =>
        ctx.client.putObject(group.href!, writeGroupVCard(group.vcard_uid!, name, [...members]), VCARD_TYPE, { etag }),
      );
    },
    async deleteGroup(grant, group) {
      await conditionalDelete('contact group', group.href!, group.etag, (await context(grant)).client);
    },
    async readContact(grant, contact, groups) {
      const now = await readBack(await context(grant), contact.href!);
      if (!now) return undefined;
      if (now.card?.kind !== 'individual' || (now.etag !== undefined && now.etag === contact.etag)) return contact;
      return contactRecordOf(grant.id, contact.href!, now.etag, now.card, contact, groups);
    },
    async readGroup(grant, group) {
      const now = await readBack(await context(grant), group.href!);
      if (!now) return undefined;
      return now.card?.kind === 'group' ? groupRecordOf(grant.id, group.href!, now.etag, now.card, group) : group;
    },
  };
}

/** The contacts of a grant whose address book is on a CardDAV server: stored contacts with the server behind them. */
export const cardDavContacts = (contextOf: (grant: GrantRecord) => Promise<CardDavContext>): ContactsProvider =>
  contactsWith(cardDavServer(contextOf));
