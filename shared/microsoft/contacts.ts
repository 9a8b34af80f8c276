import type {
  CreateContactBody,
  CreateContactGroupBody,
  ListContactsQuery,
  UpdateContactBody,
  UpdateContactGroupBody,
} from '#schemas/contact';
import type { PageQuery } from '#schemas/common';
import { decodeProviderCursor, encodeProviderCursor, invalidPageToken } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import {
  graphClientOf,
  GraphGoneError,
  GraphNotFoundError,
  GraphRequestError,
  type GraphClient,
  type GraphPage,
} from '#shared/microsoft/client';
import {
  contactFromGraph,
  GRAPH_CONTACT_SELECT,
  graphContactOf,
  type GraphContact,
} from '#shared/microsoft/graph-contact';
import type { Contact, ContactGroup, ContactsProvider, Page } from '#shared/providers/contract';

/**
 * Provider B's contacts, live through Graph: the mailbox's personal contacts, and its contact folders
 * as our contact groups. Graph's `/contacts` is the default Contacts folder only, so the address book
 * is read folder by folder: the default one, then each contact folder under it (`contactFolders`, which
 * never lists the default one). A contact is in exactly one folder: its group is that folder (none in the
 * default one); it is created in the group it names (at most one), and Graph v1.0 cannot move it to
 * another, so a change of `groups` is a 400. Child folders of contact folders are not read: `recurse` and
 * `parent_id` are 400s. `email` is Graph's `$filter` (emailAddresses/any, the one filter Graph takes on
 * addresses); `phone_number` narrows the pages here, as for provider A (Graph filters no phone number).
 * Outlook deletes a folder's contacts with it, and our contract keeps a deleted group's contacts, so a
 * group that still holds contacts is not deleted (400). Page tokens hold the folder and Graph's nextLink,
 * are bound to the grant, and continue only contact listings of the grant's own mailbox.
 */

/** Page tokens are bound to the grant: another grant's token is refused, whatever it holds. */
const scopeOf = (grant: GrantRecord) => `graph-contacts:${grant.id}`;
const groupsScopeOf = (grant: GrantRecord) => `graph-contact-groups:${grant.id}`;
/** Contact folders read at once (Graph's page size is 10 unless asked). */
const FOLDER_PAGE = 250;

export interface GraphContactFolder {
  id: string;
  displayName?: string | null;
  parentFolderId?: string | null;
}

/**
 * Where a listing is: in `folder` ('' is the default one), at Graph's next page (or its first); then the
 * folders after it, as Graph lists them, unless the listing is of that one group (`only`). The folders are
 * listed again when one ends, so a token stays small whatever the mailbox holds.
 */
interface ListingCursor {
  folder: string;
  link?: string;
  only?: true;
}

const noContact = (id: string) => new NotFoundError(`No contact '${id}' in this grant`);
const noGroup = (id: string) => new NotFoundError(`No contact group '${id}' in this grant`);
const invalidToken = invalidPageToken;

/** Graph's IDs are base64url with `=` and `-`: anything else is no contact of ours, and never reaches a path. */
const GRAPH_ID = /^[A-Za-z0-9_=+-]{1,512}$/;

const contactPath = (client: GraphClient, id: string) => {
  if (!GRAPH_ID.test(id)) throw noContact(id);
  return `${client.mailbox}/contacts/${encodeURIComponent(id)}`;
};
const folderPath = (client: GraphClient, id: string) => {
  if (!GRAPH_ID.test(id)) throw noGroup(id);
  return `${client.mailbox}/contactFolders/${encodeURIComponent(id)}`;
};
/** A folder's contacts: the default folder's (`''`) or a contact folder's. */
const contactsOf = (client: GraphClient, folder: string) =>
  folder ? `${folderPath(client, folder)}/contacts` : `${client.mailbox}/contacts`;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The link a token holds, if it continues a listing of this mailbox's `collection` (`contacts`, `contactFolders`). */
function continuation(client: GraphClient, link: string, collection: 'contacts' | 'contactFolders'): string {
  let path: string;
  try {
    path = new URL(link).pathname;
  } catch {
    throw invalidToken();
  }
  const mailbox = escapeRegExp(client.mailbox);
  const listing =
    collection === 'contacts'
      ? new RegExp(`^${mailbox}/(contactFolders(/[^/]+|\\('[^/]+'\\))/)?contacts$`, 'i')
      : new RegExp(`^${mailbox}/contactFolders$`, 'i');
  if (!listing.test(path)) throw invalidToken();
  return link;
}

function listingOf(grant: GrantRecord, token: string): ListingCursor {
  let cursor: unknown;
  try {
    cursor = JSON.parse(decodeProviderCursor(token, scopeOf(grant)));
  } catch {
    throw invalidToken();
  }
  const c = cursor as Partial<ListingCursor>;
  if (
    typeof c.folder !== 'string' ||
    (c.folder !== '' && !GRAPH_ID.test(c.folder)) ||
    (c.link !== undefined && typeof c.link !== 'string') ||
    (c.only !== undefined && c.only !== true)
  )
    throw invalidToken();
  return { folder: c.folder, ...(c.link !== undefined ? { link: c.link } : {}), ...(c.only ? { only: true } : {}) };
}

/** Every contact folder of the mailbox (one page but for the rare mailbox with hundreds). */
export async function allFolders(client: GraphClient): Promise<GraphContactFolder[]> {
  const folders: GraphContactFolder[] = [];
  for await (const page of client.pages<GraphContactFolder>({
    path: `${client.mailbox}/contactFolders`,
    query: { $top: FOLDER_PAGE, $select: ['id', 'displayName', 'parentFolderId'] },
    batch: true,
  }))
    folders.push(...page.value);
  return folders;
}

/** A contact and the mailbox's contact folders, read together (one `$batch`): its group is its folder, if it is one of them. */
async function readContact(client: GraphClient, id: string): Promise<{ contact: GraphContact; group?: string }> {
  const [contact, folders] = await Promise.all([
    client
      .call<GraphContact>({ path: contactPath(client, id), query: { $select: GRAPH_CONTACT_SELECT }, batch: true })
      .catch((error: unknown) => {
        throw notFound(error, noContact(id));
      }),
    allFolders(client),
  ]);
  const folder = contact.parentFolderId ?? undefined;
  return { contact, ...(folder && folders.some((f) => f.id === folder) ? { group: folder } : {}) };
}

/** Graph's 404 (or its 400 for an ID it cannot parse) as ours. */
function notFound(error: unknown, ours: NotFoundError): unknown {
  if (error instanceof GraphNotFoundError) return ours;
  if (error instanceof GraphRequestError && /^ErrorInvalidId/i.test(error.graphCode ?? '')) return ours;
  return error;
}

const groupOf = (grant: GrantRecord, f: GraphContactFolder): ContactGroup => ({
  id: f.id,
  object: 'contact_group',
  grant_id: grant.id,
  name: f.displayName ?? '',
  group_type: 'user',
  path: f.displayName ?? '',
});

/** One page of a folder's contacts: the first (our filter as Graph's) or the one Graph's link points at. */
async function folderPage(
  client: GraphClient,
  cursor: ListingCursor,
  email: string | undefined,
  top: number,
): Promise<GraphPage<GraphContact>> {
  try {
    if (cursor.link) return await client.page<GraphContact>(continuation(client, cursor.link, 'contacts'));
    return await client.page<GraphContact>({
      path: contactsOf(client, cursor.folder),
      query: {
        $top: top,
        $select: GRAPH_CONTACT_SELECT,
        ...(email !== undefined
          ? { $filter: `emailAddresses/any(a:a/address eq '${email.replace(/'/g, "''")}')` }
          : {}),
      },
    });
  } catch (error) {
    if (error instanceof GraphGoneError) throw invalidToken();
    // A folder deleted since the listing began has no contacts left to list.
    if (error instanceof GraphNotFoundError && cursor.folder && !cursor.link) return { value: [] };
    throw error;
  }
}

const digits = (phone: string) => phone.replace(/[^\d+]/g, '');

export const graphContacts: ContactsProvider = {
  async list(grant, query: ListContactsQuery, limit): Promise<Page<Contact>> {
    if (query.source === 'inbox' || query.source === 'domain')
      throw new InvalidRequestError(
        `'source=${query.source}' is not available for microsoft grants (their address book is; Graph keeps no ${
          query.source === 'inbox' ? 'contacts collected from mail' : 'directory'
        } among personal contacts)`,
      );
    if (query.recurse)
      throw new InvalidRequestError(
        "'recurse' is not available for microsoft grants: their groups are contact folders, read without their child folders",
      );
    const client = await graphClientOf(grant);
    let cursor: ListingCursor;
    if (query.page_token) cursor = listingOf(grant, query.page_token);
    else if (query.group !== undefined) {
      cursor = { folder: query.group, only: true };
      // A group that is no contact folder of this mailbox is a 404, not an empty list.
      await client
        .call({ path: folderPath(client, query.group), query: { $select: ['id'] } })
        .catch((error: unknown) => {
          throw notFound(error, noGroup(query.group!));
        });
    } else cursor = { folder: '' };

    const phone = query.phone_number !== undefined ? digits(query.phone_number) : undefined;
    const items: Contact[] = [];
    let next: ListingCursor | undefined = cursor;
    let folders: string[] | undefined;
    /** The folder after `folder` in Graph's listing (the first one after the default folder); none after the last, or a deleted one. */
    const after = async (folder: string): Promise<string | undefined> => {
      folders ??= (await allFolders(client)).map((f) => f.id);
      const at = folder ? folders.indexOf(folder) : -1;
      return folder && at < 0 ? undefined : folders[at + 1];
    };
    // Narrowed by phone here, a page reads at most one page of Graph's per folder (it may come back short), never the whole book.
    for (let paged = false; next && items.length < limit && !(phone !== undefined && paged);) {
      const page = await folderPage(client, next, query.email, limit - items.length);
      const group = next.folder || undefined;
      for (const c of page.value) {
        const contact = contactFromGraph(grant, c, group);
        if (phone === undefined || contact.phone_numbers.some((n) => digits(n.number) === phone)) items.push(contact);
      }
      paged = !!page.nextLink;
      if (page.nextLink) next = { ...next, link: page.nextLink };
      else {
        const following: string | undefined = next.only ? undefined : await after(next.folder);
        next = following !== undefined ? { folder: following } : undefined;
      }
    }
    return { items, ...(next ? { nextCursor: encodeProviderCursor(scopeOf(grant), JSON.stringify(next)) } : {}) };
  },

  async get(grant, contactId) {
    const { contact, group } = await readContact(await graphClientOf(grant), contactId);
    return contactFromGraph(grant, contact, group);
  },

  async create(grant, body: CreateContactBody) {
    const fields = graphContactOf(body);
    if (
      ![
        'givenName',
        'middleName',
        'surname',
        'nickName',
        'companyName',
        'emailAddresses',
        'businessPhones',
        'homePhones',
        'mobilePhone',
      ].some((f) => {
        const v = fields[f];
        return Array.isArray(v) ? v.length > 0 : !!v;
      })
    )
      throw new InvalidRequestError('A contact needs a name, a company, an email address or a phone number');
    const groups = body.groups ?? [];
    if (groups.length > 1)
      throw new InvalidRequestError(
        "A microsoft grant's contact is in one group at most: its groups are contact folders, and a contact is in one folder",
      );
    const group = groups[0]?.id;
    const client = await graphClientOf(grant);
    const created = await client
      .call<GraphContact>({
        method: 'POST',
        path: group !== undefined ? `${folderPath(client, group)}/contacts` : `${client.mailbox}/contacts`,
        body: fields,
      })
      .catch((error: unknown) => {
        throw group !== undefined ? notFound(error, noGroup(group)) : error;
      });
    return contactFromGraph(grant, created, group);
  },

  async update(grant, contactId, body: UpdateContactBody) {
    const client = await graphClientOf(grant);
    const fields = graphContactOf(body);
    const current = await readContact(client, contactId);
    const { group } = current;
    if (body.groups !== undefined) {
      const wanted = [...new Set(body.groups.map((g) => g.id))];
      if (wanted.length > 1 || (wanted[0] ?? undefined) !== group)
        throw new InvalidRequestError(
          `A microsoft grant's contact stays in the group it was created in (${
            group ? `'${group}'` : 'none'
          }): Graph cannot move a contact to another contact folder. Create it in the other group and delete this one`,
        );
    }
    const changed = Object.keys(fields).length
      ? await client
          .call<GraphContact>({ method: 'PATCH', path: contactPath(client, contactId), body: fields })
          .catch((error: unknown) => {
            throw notFound(error, noContact(contactId));
          })
      : current.contact;
    return contactFromGraph(grant, changed, group);
  },

  async delete(grant, contactId) {
    const client = await graphClientOf(grant);
    await client.call({ method: 'DELETE', path: contactPath(client, contactId) }).catch((error: unknown) => {
      throw notFound(error, noContact(contactId));
    });
  },

  async listGroups(grant, query: PageQuery, limit): Promise<Page<ContactGroup>> {
    const client = await graphClientOf(grant);
    const page = await (
      query.page_token
        ? client.page<GraphContactFolder>(
            continuation(client, decodeProviderCursor(query.page_token, groupsScopeOf(grant)), 'contactFolders'),
          )
        : client.page<GraphContactFolder>({
            path: `${client.mailbox}/contactFolders`,
            query: { $top: limit, $select: ['id', 'displayName', 'parentFolderId'] },
          })
    ).catch((error: unknown) => {
      throw error instanceof GraphGoneError ? invalidToken() : error;
    });
    return {
      items: page.value.map((f) => groupOf(grant, f)),
      ...(page.nextLink ? { nextCursor: encodeProviderCursor(groupsScopeOf(grant), page.nextLink) } : {}),
    };
  },

  async createGroup(grant, body: CreateContactGroupBody) {
    if (body.parent_id !== undefined)
      throw new InvalidRequestError(
        "'parent_id' is not available for microsoft grants: their groups are contact folders, without child folders here",
      );
    const client = await graphClientOf(grant);
    const created = await client.call<GraphContactFolder>({
      method: 'POST',
      path: `${client.mailbox}/contactFolders`,
      body: { displayName: body.name },
    });
    return groupOf(grant, created);
  },

  async updateGroup(grant, groupId, body: UpdateContactGroupBody) {
    const client = await graphClientOf(grant);
    const changed = await client
      .call<GraphContactFolder>({
        method: 'PATCH',
        path: folderPath(client, groupId),
        body: { displayName: body.name },
      })
      .catch((error: unknown) => {
        throw notFound(error, noGroup(groupId));
      });
    return groupOf(grant, changed);
  },

  async deleteGroup(grant, groupId) {
    const client = await graphClientOf(grant);
    const held = await client
      .page<{ id: string }>({ path: `${folderPath(client, groupId)}/contacts`, query: { $top: 1, $select: ['id'] } })
      .catch((error: unknown) => {
        throw notFound(error, noGroup(groupId));
      });
    if (held.value.length)
      throw new InvalidRequestError(
        `Contact group '${groupId}' still holds contacts: Outlook deletes a contact folder's contacts with it, so delete them first`,
      );
    await client.call({ method: 'DELETE', path: folderPath(client, groupId) }).catch((error: unknown) => {
      throw notFound(error, noGroup(groupId));
    });
  },
};
