import {
  ContactGroupObject,
  ContactObject,
  CreateContactBody,
  CreateContactGroupBody,
  GetContactQuery,
  ListContactsQuery,
  UpdateContactBody,
  UpdateContactGroupBody,
} from '#schemas/contact';
import { PageQuery, SelectQuery } from '#schemas/common';
import type { RouteTable } from '#shared/http/route';

/** Contacts of a grant and their groups (the address book; `source=inbox`: people the mailbox corresponds with). */
export const routes = {
  listContacts: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/contacts',
    summary: 'Contacts of a grant (source address_book unless named)',
    query: ListContactsQuery,
    response: ContactObject,
    responseKind: 'list',
    select: true,
  },
  createContact: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/contacts',
    summary: 'Create a contact in the address book',
    query: SelectQuery,
    body: CreateContactBody,
    response: ContactObject,
    select: true,
  },
  listContactGroups: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/contacts/groups',
    summary: 'Contact groups of a grant',
    query: PageQuery,
    response: ContactGroupObject,
    responseKind: 'list',
    select: true,
  },
  createContactGroup: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/contacts/groups',
    summary: 'Create a contact group',
    body: CreateContactGroupBody,
    response: ContactGroupObject,
  },
  updateContactGroup: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/contacts/groups/{group_id}',
    summary: 'Rename a contact group',
    body: UpdateContactGroupBody,
    response: ContactGroupObject,
  },
  deleteContactGroup: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/contacts/groups/{group_id}',
    summary: 'Delete a contact group (its contacts stay)',
    responseKind: 'empty',
  },
  getContact: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/contacts/{contact_id}',
    summary: 'One contact',
    query: GetContactQuery,
    response: ContactObject,
    select: true,
  },
  updateContact: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/contacts/{contact_id}',
    summary: 'Change a contact',
    query: SelectQuery,
    body: UpdateContactBody,
    response: ContactObject,
    select: true,
  },
  deleteContact: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/contacts/{contact_id}',
    summary: 'Delete a contact',
    responseKind: 'empty',
  },
} as const satisfies RouteTable;
