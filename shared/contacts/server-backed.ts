import * as stored from '#shared/contacts/stored';
import type { ContactGroupRecord, ContactRecord } from '#shared/db/contacts';
import * as db from '#shared/db/contacts';
import type { GrantRecord } from '#shared/db/grants';
import { ChangedOnServerError, ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { parseId, type ContactGroupId } from '#shared/ids';
import type { ContactGroup, ContactServer, ContactsProvider } from '#shared/providers/contract';
import { clock } from '#shared/time';
import type {
  CreateContactBody,
  CreateContactGroupBody,
  UpdateContactBody,
  UpdateContactGroupBody,
} from '#schemas/contact';

/**
 * Stored contacts with an address book server behind them (the ContactServer port: CardDAV). Reads
 * answer from the stored records, as stored contacts' do; the server's contacts and groups are
 * mirrored into them by the provider's sync. Each write goes to the server first under the version
 * last read, then is stored with its notification; a change another client made first is never
 * overwritten: the server's version is read back and stored, and the request answers 409. Groups
 * are flat and keep their members (`member_uids`, by contact UID): a contact's groups are the groups
 * whose members name it. Contacts the server does not hold (collected from mail, or stored before
 * the server was connected) stay stored-only.
 */

/** The groups whose members name `uid`, in a stable order. */
export function memberGroupIds(uid: string | undefined, groups: readonly ContactGroupRecord[]): ContactGroupId[] {
  if (uid === undefined) return [];
  return groups
    .filter((g) => g.member_uids?.includes(uid))
    .map((g) => g.id)
    .sort();
}

export const sameIds = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((value, i) => value === [...b].sort()[i]);

const idsOf = (groups: readonly ContactGroupRecord[]) => new Set(groups.map((g) => g.id as string));

/** A contact's stored fields without its bookkeeping (what its server keeps). */
function fieldsOf(record: ContactRecord): db.ContactData {
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
  return fields;
}

const changedOnServer = (what: string) =>
  new ConflictError(`The ${what} was changed on the server by another client; fetch it again`);

export function contactsWith(server: ContactServer): ContactsProvider {
  /** Whether a record is a contact of the server's address book (not one kept here only). */
  const held = (record: ContactRecord) => record.source === 'address_book' && server.holds(record);

  /** The server's version of a contact after a conflict, stored with its notification: the record now (undefined when gone, and removed). */
  async function refreshContact(grant: GrantRecord, record: ContactRecord): Promise<ContactRecord | undefined> {
    const groups = await db.allContactGroups(grant.id);
    const now = await server.readContact(grant, record, groups);
    if (!now) {
      await stored.removeContact(grant, record, false);
      return undefined;
    }
    if (now === record) return record;
    return (await stored.storeContact(grant, record, now, false, idsOf(groups))) ? now : record;
  }

  /** The server's version of a group after a conflict, stored (removed when gone). */
  async function refreshGroup(grant: GrantRecord, group: ContactGroupRecord): Promise<void> {
    const now = await server.readGroup(grant, group);
    if (!now) await db.removeSyncedContactGroup(group);
    else if (now !== group) await db.putSyncedContactGroup(now, group);
  }

  /**
   * Adds `uid` to or removes it from groups' members on the server, then stores them. A group another
   * client changed meanwhile is read back and stored as the server has it, and left out: those groups
   * are returned.
   */
  async function changeMemberships(
    grant: GrantRecord,
    uid: string,
    join: readonly ContactGroupRecord[],
    leave: readonly ContactGroupRecord[],
  ): Promise<ContactGroupRecord[]> {
    const conflicts: ContactGroupRecord[] = [];
    const changes = [...join.map((group) => ({ group, add: true })), ...leave.map((group) => ({ group, add: false }))];
    for (const { group, add } of changes) {
      const members = new Set(group.member_uids ?? []);
      if (add === members.has(uid)) continue;
      if (add) members.add(uid);
      else members.delete(uid);
      try {
        const etag = await server.updateGroup(grant, group, group.name, [...members]);
        const next: ContactGroupRecord = {
          ...group,
          member_uids: [...members],
          ...(etag ? { etag } : {}),
          updated_at: clock.nowSeconds(),
          version: group.version + 1,
        };
        if (!etag) delete next.etag;
        await db.putSyncedContactGroup(next, group);
      } catch (error) {
        if (!(error instanceof ChangedOnServerError)) throw error;
        await refreshGroup(grant, group);
        conflicts.push(group);
      }
    }
    return conflicts;
  }

  /** Re-derives a contact's groups from the stored groups' members, storing the change if any. */
  async function alignGroups(grant: GrantRecord, record: ContactRecord): Promise<ContactRecord> {
    const groups = await db.allContactGroups(grant.id);
    const groupIds = memberGroupIds(record.vcard_uid, groups);
    if (sameIds(groupIds, record.group_ids)) return record;
    const next: ContactRecord = {
      ...record,
      group_ids: groupIds,
      updated_at: clock.nowSeconds(),
      version: record.version + 1,
    };
    return (await stored.storeContact(grant, record, next, false, idsOf(groups))) ? next : record;
  }

  /** The groups a request names: each must be a group on the server. */
  function requestedGroups(
    body: { groups?: readonly { id: string }[] },
    groups: readonly ContactGroupRecord[],
  ): ContactGroupRecord[] {
    const chosen = new Map<string, ContactGroupRecord>();
    (body.groups ?? []).forEach((ref, i) => {
      const id = parseId('contactGroup', ref.id);
      if (!id)
        throw new InvalidRequestError(
          `groups[${i}].id '${ref.id}' is not a contact group ID (GET /v3/grants/{grant_id}/contacts/groups lists them)`,
        );
      const group = groups.find((g) => g.id === id && server.holds(g));
      if (!group) throw new InvalidRequestError(`Contact group '${ref.id}' does not exist in this grant`);
      chosen.set(id, group);
    });
    return [...chosen.values()];
  }

  async function requireGroup(
    grant: GrantRecord,
    groupId: string,
  ): Promise<{ group: ContactGroupRecord; groups: ContactGroupRecord[] }> {
    const id = parseId('contactGroup', groupId);
    const groups = await db.allContactGroups(grant.id);
    const group = id ? groups.find((g) => g.id === id) : undefined;
    if (!group) throw new NotFoundError(`Contact group '${groupId}' not found`);
    return { group, groups };
  }

  /** Flat groups: a group's path is its name. */
  const groupView = (grant: GrantRecord, group: ContactGroupRecord): ContactGroup =>
    stored.groupView(grant, group, group.name);

  return {
    list: stored.listContacts,
    get: stored.getContact,

    async create(grant, body: CreateContactBody) {
      stored.checkIdentified(body);
      const groups = await db.allContactGroups(grant.id);
      const join = requestedGroups(body, groups);
      const { groups: _groups, ...fields } = body;
      const place = await server.createContact(grant, fields);
      const conflicts = await changeMemberships(grant, place.vcard_uid, join, []);
      const now = clock.nowSeconds();
      const after = conflicts.length ? await db.allContactGroups(grant.id) : groups;
      const record = stored.withIndexes({
        ...fields,
        ...place,
        grant_id: grant.id,
        source: 'address_book',
        group_ids: join.filter((g) => !conflicts.includes(g)).map((g) => g.id),
        created_at: now,
        updated_at: now,
        version: 1,
      });
      if (!(await stored.storeContact(grant, undefined, record, false))) {
        // A sync stored it first (it saw the new contact on the server): that record answers.
        const synced = await db.getContact(grant.id, record.id);
        if (synced) return stored.contactView(grant, synced, idsOf(after));
        throw new ConflictError('The contact was stored by another request meanwhile; fetch it again');
      }
      return stored.contactView(grant, record, idsOf(after));
    },

    async update(grant, contactId, body: UpdateContactBody) {
      const current = await stored.requireContact(grant, contactId);
      if (!held(current)) return stored.updateContact(grant, contactId, body);
      const groups = await db.allContactGroups(grant.id);
      const existing = idsOf(groups);
      const join = body.groups !== undefined ? requestedGroups(body, groups) : undefined;
      const { groups: _groups, ...fields } = body;
      const merged = { ...current, ...fields } as ContactRecord;
      stored.checkIdentified(merged);
      const draft = stored.withIndexes({ ...merged, updated_at: clock.nowSeconds(), version: current.version + 1 });
      let etag: string | undefined;
      try {
        etag = await server.updateContact(grant, current, fieldsOf(draft));
      } catch (error) {
        if (!(error instanceof ChangedOnServerError)) throw error;
        if (!(await refreshContact(grant, current)))
          throw new NotFoundError(`Contact '${contactId}' was deleted on the server by another client`);
        throw changedOnServer('contact');
      }
      const next: ContactRecord = { ...draft, ...(etag ? { etag } : {}) };
      if (!etag) delete next.etag;
      let conflicts: ContactGroupRecord[] = [];
      if (join) {
        const joinIds = idsOf(join);
        const leave = groups.filter(
          (g) => server.holds(g) && g.member_uids?.includes(current.vcard_uid!) && !joinIds.has(g.id),
        );
        conflicts = await changeMemberships(grant, current.vcard_uid!, join, leave);
      }
      const after = join ? await db.allContactGroups(grant.id) : groups;
      next.group_ids = memberGroupIds(current.vcard_uid, after);
      if (!(await stored.storeContact(grant, current, next, false, existing))) {
        // A sync stored the server's version meanwhile; that is ours when its ETag is.
        const synced = await db.getContact(grant.id, current.id);
        if (!synced || synced.etag !== next.etag)
          throw new ConflictError('The contact was changed by another request; fetch it again and retry');
        return stored.contactView(grant, await alignGroups(grant, synced), idsOf(after));
      }
      if (conflicts.length) {
        await alignGroups(grant, next);
        throw new ConflictError(
          `The contact was saved, but its group(s) ${conflicts.map((g) => `'${g.name}'`).join(', ')} changed on the server by another client; fetch them again`,
        );
      }
      return stored.contactView(grant, next, idsOf(after));
    },

    async delete(grant, contactId) {
      const current = await stored.requireContact(grant, contactId);
      if (!held(current)) return stored.deleteContact(grant, contactId);
      try {
        await server.deleteContact(grant, current);
      } catch (error) {
        if (!(error instanceof ChangedOnServerError)) throw error;
        // Gone from the server meanwhile: gone from here too (refreshContact removed it).
        if (!(await refreshContact(grant, current))) return;
        throw changedOnServer('contact');
      }
      // False: a sync removed it meanwhile (with its notification).
      await stored.removeContact(grant, current, false);
    },

    listGroups: stored.listContactGroups,

    async createGroup(grant, body: CreateContactGroupBody) {
      if (body.parent_id !== undefined) throw new InvalidRequestError(server.flatGroups);
      const name = body.name.trim();
      const groups = await db.allContactGroups(grant.id);
      if (groups.some((g) => g.name.trim().toLowerCase() === name.toLowerCase()))
        throw new ConflictError(`A contact group named '${name}' already exists`);
      const place = await server.createGroup(grant, name);
      const now = clock.nowSeconds();
      const group: ContactGroupRecord = {
        ...place,
        grant_id: grant.id,
        name,
        member_uids: [],
        created_at: now,
        updated_at: now,
        version: 1,
      };
      if (!place.etag) delete group.etag;
      // False: a sync stored it first, which is the same group.
      await db.putSyncedContactGroup(group, undefined);
      return groupView(grant, group);
    },

    async updateGroup(grant, groupId, body: UpdateContactGroupBody) {
      const { group, groups } = await requireGroup(grant, groupId);
      const name = body.name.trim();
      if (!server.holds(group))
        throw new InvalidRequestError(
          `Contact group '${groupId}' is not on the address book's server and cannot be renamed`,
        );
      if (groups.some((g) => g.id !== group.id && g.name.trim().toLowerCase() === name.toLowerCase()))
        throw new ConflictError(`A contact group named '${name}' already exists`);
      let etag: string | undefined;
      try {
        etag = await server.updateGroup(grant, group, name, group.member_uids ?? []);
      } catch (error) {
        if (!(error instanceof ChangedOnServerError)) throw error;
        await refreshGroup(grant, group);
        throw changedOnServer('contact group');
      }
      const next: ContactGroupRecord = {
        ...group,
        name,
        ...(etag ? { etag } : {}),
        updated_at: clock.nowSeconds(),
        version: group.version + 1,
      };
      if (!etag) delete next.etag;
      if (!(await db.putSyncedContactGroup(next, group)))
        throw new ConflictError('The contact group was changed by another request; fetch it again and retry');
      return groupView(grant, next);
    },

    async deleteGroup(grant, groupId) {
      const { group } = await requireGroup(grant, groupId);
      if (!server.holds(group))
        throw new InvalidRequestError(
          `Contact group '${groupId}' is not on the address book's server and cannot be deleted here`,
        );
      try {
        await server.deleteGroup(grant, group);
      } catch (error) {
        if (!(error instanceof ChangedOnServerError)) throw error;
        await refreshGroup(grant, group);
        throw changedOnServer('contact group');
      }
      await db.removeSyncedContactGroup(group);
      // Its members leave it now (with their contact.updated), not at the next sync.
      const members = (await db.allContacts(grant.id, 'address_book')).filter((c) => c.group_ids.includes(group.id));
      for (const member of members) await alignGroups(grant, member);
    },
  };
}
