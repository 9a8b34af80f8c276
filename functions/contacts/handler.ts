import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { contactsOf } from '#shared/registries/contacts';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listContacts: async ({ grant, query }) => {
    const page = await contactsOf(grant).list(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  createContact: async ({ grant, body }) => ok(await contactsOf(grant).create(grant, body)),
  getContact: async ({ grant, params, query }) => ok(await contactsOf(grant).get(grant, params.contact_id, query)),
  updateContact: async ({ grant, params, body }) => ok(await contactsOf(grant).update(grant, params.contact_id, body)),
  deleteContact: async ({ grant, params }) => {
    await contactsOf(grant).delete(grant, params.contact_id);
    return empty();
  },
  listContactGroups: async ({ grant, query }) => {
    const page = await contactsOf(grant).listGroups(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  createContactGroup: async ({ grant, body }) => ok(await contactsOf(grant).createGroup(grant, body)),
  updateContactGroup: async ({ grant, params, body }) =>
    ok(await contactsOf(grant).updateGroup(grant, params.group_id, body)),
  deleteContactGroup: async ({ grant, params }) => {
    await contactsOf(grant).deleteGroup(grant, params.group_id);
    return empty();
  },
});
